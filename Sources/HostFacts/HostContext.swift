// HostContext.swift — what a crash report can say of the machine and the container it ran in,
// where readable: the memory, the container's id, the Kubernetes pod and namespace. Read at the
// next launch (or by the crash-time uploader), which runs where the crash happened.
#if canImport(Glibc)
import Glibc
#endif

package struct HostContext: Sendable, Equatable {
    /// Total memory (`/proc/meminfo` MemTotal), bytes.
    package var memoryBytes: Int64?
    /// The container's id: the 64-hex-digit id a container runtime names the cgroup after
    /// (Docker, containerd, CRI-O), from `/proc/self/cgroup`, else `/proc/self/mountinfo`.
    package var containerID: String?
    /// Kubernetes: the pod's namespace (the service account's `namespace` file) and name
    /// (`HOSTNAME`, which Kubernetes sets to it), when `KUBERNETES_SERVICE_HOST` says it runs in one.
    package var kubernetesNamespace: String?
    package var kubernetesPod: String?

    package init(memoryBytes: Int64? = nil, containerID: String? = nil, kubernetesNamespace: String? = nil, kubernetesPod: String? = nil) {
        self.memoryBytes = memoryBytes
        self.containerID = containerID
        self.kubernetesNamespace = kubernetesNamespace
        self.kubernetesPod = kubernetesPod
    }

    /// This host's, read now (a few small files; nothing that fails is an error).
    package static func current() -> HostContext {
        var context = HostContext()
        if let (meminfo, _) = SmallFile.text("/proc/meminfo", limit: 8192) {
            for line in meminfo.split(separator: "\n") where line.hasPrefix("MemTotal:") {
                let fields = line.split(separator: " ")
                if fields.count >= 2, let kilobytes = Int64(fields[1]) { context.memoryBytes = kilobytes * 1024 }
            }
        }
        for file in ["/proc/self/cgroup", "/proc/self/mountinfo"] where context.containerID == nil {
            if let (text, _) = SmallFile.text(file, limit: 65536) { context.containerID = containerID(in: text) }
        }
        if getenv("KUBERNETES_SERVICE_HOST") != nil {
            if let (text, _) = SmallFile.text("/var/run/secrets/kubernetes.io/serviceaccount/namespace", limit: 256) {
                let namespace = text.split(separator: "\n").first.map(String.init) ?? ""
                if !namespace.isEmpty { context.kubernetesNamespace = namespace }
            }
            context.kubernetesPod = getenv("HOSTNAME").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        return context
    }

    /// The first run of exactly 64 hex digits in a cgroup path (`/docker/<id>`,
    /// `…/cri-containerd-<id>.scope`, `/containers/<id>/hostname` in mountinfo).
    package static func containerID(in text: String) -> String? {
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, isLowerHex(bytes[end]) { end += 1 }
            if end - start == 64 { return String(decoding: bytes[start..<end], as: UTF8.self) }
            start = end + 1
        }
        return nil
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) }
}

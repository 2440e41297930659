// capture: plain + CrashHandler.start, as README shows it. No Foundation of its own.
//   capture DIR    records would go to DIR (or $LAUNCH_BENCH_DIR); prints
//                  "capture start_us=T init_us=I result=R objects=N", T the wall time of the
//                  start call, I that of the configuration's init before it, R what start returned
//   capture DIR crash   then dies of a null dereference: launch-cost makes the records it seeds
//                  directories with this way (a real record to parse and fold)
// With CRASHCAPTURE_DISABLE=1 start installs nothing (result=disabledByEnvironment).
import CrashCapture
import LaunchSupport
#if canImport(Glibc)
import Glibc
#endif

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : getenv("LAUNCH_BENCH_DIR").map { String(cString: $0) } ?? "/tmp/launch-bench-capture"
let beforeInit = monotonicNanoseconds()
let configuration = CrashHandler.Configuration(directory: directory, appName: "launch-bench", appVersion: "1.0.0")
let before = monotonicNanoseconds()
let result = try CrashHandler.start(configuration)
let after = monotonicNanoseconds()
let name = switch result { // not "\(result)": reflection would cost plain nothing and this program some
case .installed: "installed"
case .alreadyInstalled: "alreadyInstalled"
case .disabledByEnvironment: "disabledByEnvironment"
case .disabledInSecureProcess: "disabledInSecureProcess"
}
print("capture start_us=\(microseconds(from: before, to: after)) init_us=\(microseconds(from: beforeInit, to: before)) result=\(name) objects=\(loadedSharedObjects())")
if CommandLine.arguments.count > 2 && CommandLine.arguments[2] == "crash" {
    UnsafeMutablePointer<Int>(bitPattern: 8)!.pointee = 1
}

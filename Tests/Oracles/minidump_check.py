"""A minidump as PyPI's `minidump` parser reads it, printed as one JSON object for the Swift tests
(CrashMinidumpTests) to compare with the record it came from.

Usage: minidump_check.py FILE

The parser reads the header, the directory, SystemInfo, ThreadList (and the x86-64 contexts),
ModuleList, MemoryList and the Exception stream; its memory reader reads the crashed thread's stack
at its stack pointer. It knows no aarch64 context: for an 0x8003 (Breakpad ARM64) dump the
context's pc and sp are read here at the offsets of Breakpad's MDRawContextARM64_Old. Nor does it
know the Linux and Crashpad streams (it skips them): their types, the LinuxProcStatus text and the
CrashpadInfo simple annotations are read here from the raw directory. A file the parser refuses
makes this script exit 1 with its error.
"""
import io
import json
import logging
import struct
import sys

from minidump.minidumpfile import MinidumpFile
from minidump.constants import MINIDUMP_STREAM_TYPE
from minidump.streams.ModuleListStream import MINIDUMP_MODULE_LIST
from minidump.streams.SystemInfoStream import PROCESSOR_ARCHITECTURE

# The parser also tries to read a Windows PEB through the first thread's TEB, and logs its
# failure: a Linux minidump has neither.
logging.disable(logging.CRITICAL)


def context_registers(data, architecture):
    """pc and sp of a thread context, from the parser's CONTEXT (x86-64) or the raw bytes (arm64)."""
    if architecture == PROCESSOR_ARCHITECTURE.AMD64:
        return None  # taken from the parser's own CONTEXT below
    if len(data) < 272:
        raise ValueError("arm64 context of %d bytes" % len(data))
    flags = struct.unpack_from("<Q", data, 0)[0]
    sp, pc = struct.unpack_from("<QQ", data, 8 + 31 * 8)
    return {"flags": flags, "pc": pc, "sp": sp}


def linux_proc_status(raw):
    """The LinuxProcStatus stream (0x47670004, Breakpad's) as text, read from the stream directory
    itself (the header's stream count at 8, the directory's RVA at 12; 12-byte entries)."""
    count, directory = struct.unpack_from("<II", raw, 8)
    for index in range(count):
        kind, size, rva = struct.unpack_from("<III", raw, directory + 12 * index)
        if kind == 0x47670004:
            return raw[rva:rva + size].decode("utf-8", "replace")
    return None


def main(path):
    raw = open(path, "rb").read()
    dump = MinidumpFile.parse(path)
    arch = dump.sysinfo.ProcessorArchitecture
    result = {
        "architecture": arch.name,
        "platform": dump.sysinfo.PlatformId.value,
        "processors": dump.sysinfo.NumberOfProcessors,
        "processorLevel": dump.sysinfo.ProcessorLevel,
        "processorRevision": dump.sysinfo.ProcessorRevision,
        "procStatus": linux_proc_status(raw),
        "threads": [],
        "modules": [],
        "memory": [],
        "exception": None,
        "stackAtSP": None,
    }
    for thread in dump.threads.threads:
        location = thread.ThreadContext
        context = raw[location.Rva:location.Rva + location.DataSize]
        if arch == PROCESSOR_ARCHITECTURE.AMD64:
            c = thread.ContextObject
            registers = {"flags": c.ContextFlags, "pc": c.Rip, "sp": c.Rsp}
        else:
            registers = context_registers(context, arch)
        result["threads"].append({
            "tid": thread.ThreadId,
            "contextSize": location.DataSize,
            "pc": registers["pc"],
            "sp": registers["sp"],
            "stackStart": thread.Stack.StartOfMemoryRange,
            "stackSize": thread.Stack.MemoryLocation.DataSize,
        })
    # The parser keeps a module's name and span; its CodeView record is read from the raw list.
    for directory in dump.directories:
        if directory.StreamType == MINIDUMP_STREAM_TYPE.ModuleListStream:
            handle = io.BytesIO(raw)
            handle.seek(directory.Location.Rva)
            for module, parsed in zip(MINIDUMP_MODULE_LIST.parse(handle).Modules, dump.modules.modules):
                cv = raw[module.CvRecord.Rva:module.CvRecord.Rva + module.CvRecord.DataSize]
                result["modules"].append({
                    "name": parsed.name,
                    "base": parsed.baseaddress,
                    "size": parsed.size,
                    "cvSignature": struct.unpack_from("<I", cv, 0)[0] if len(cv) >= 4 else None,
                    "buildID": cv[4:].hex(),
                })
    if dump.memory_segments is not None:
        result["memory"] = [[s.start_virtual_address, s.size] for s in dump.memory_segments.memory_segments]
    if dump.exception is not None and dump.exception.exception_records:
        record = dump.exception.exception_records[0]
        e = record.ExceptionRecord
        result["exception"] = {
            "thread": record.ThreadId,
            "code": e.ExceptionCode_raw,
            "flags": e.ExceptionFlags,
            "address": e.ExceptionAddress,
            "contextRva": record.ThreadContext.Rva,
        }
        crashed = next((t for t in result["threads"] if t["tid"] == record.ThreadId), None)
        if crashed is not None:
            try:
                result["stackAtSP"] = dump.get_reader().read(crashed["sp"], 16).hex()
            except Exception as error:  # the stack is not in the MemoryList
                result["stackAtSP"] = None
                result["stackError"] = str(error)
    # The raw directory: every stream type, and the two streams the tests read beyond the parser.
    count, directory_rva = struct.unpack_from("<II", raw, 8)
    result["streamTypes"] = []
    result["annotations"] = {}
    for index in range(count):
        kind, size, rva = struct.unpack_from("<III", raw, directory_rva + 12 * index)
        result["streamTypes"].append(kind)
        if kind == 0x47670004:  # LinuxProcStatus
            result["procStatus"] = raw[rva:rva + size].decode("utf-8")
        if kind == 0x47670009:  # LinuxMaps
            result["maps"] = raw[rva:rva + size].decode("utf-8")
        if kind == 0x43500001:  # CrashpadInfo: version, report_id, client_id, simple_annotations
            dictionary_size, dictionary_rva = struct.unpack_from("<II", raw, rva + 4 + 16 + 16)
            entries = struct.unpack_from("<I", raw, dictionary_rva)[0]
            for entry in range(entries):
                key_rva, value_rva = struct.unpack_from("<II", raw, dictionary_rva + 4 + 8 * entry)
                def text(at):
                    length = struct.unpack_from("<I", raw, at)[0]
                    return raw[at + 4:at + 4 + length].decode("utf-8")
                result["annotations"][text(key_rva)] = text(value_rva)
    print(json.dumps(result))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as error:
        print("minidump_check: %s: %s" % (type(error).__name__, error), file=sys.stderr)
        sys.exit(1)

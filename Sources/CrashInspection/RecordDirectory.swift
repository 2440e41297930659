// RecordDirectory.swift — finds the records in a directory, reading each as untrusted and keeping one line of error per bad file.
package import CrashRecordFormat
import Foundation

/// One file of a record directory: its record, or why it could not be read.
package struct RecordEntry: Sendable {
    /// The file's full path.
    package var path: String
    /// File name without `.ccrec` / `.ccrec.partial`: what `show` accepts as an id.
    package var id: String
    package var result: Result<CrashRecord, CrashRecordError>

    package var record: CrashRecord? { try? result.get() }
}

package enum RecordDirectory {
    /// The id of a record file: its name without the record extensions.
    package static func id(of path: String) -> String {
        let name = (path as NSString).lastPathComponent
        return RecordFileName.stem(of: name) ?? name
    }

    /// Every `*.ccrec` and `*.ccrec.partial` entry of `directory`, oldest name first. Entries
    /// are read one by one; a bad one becomes a `.failure` and the rest are still read. Names
    /// are taken from the directory listing only, so nothing outside it is ever opened.
    /// - Throws: ``CrashRecordError/unreadable(path:reason:)`` when the directory itself cannot be listed.
    package static func entries(in directory: String, sizeLimit: Int = CrashRecordReader.defaultSizeLimit) throws -> [RecordEntry] {
        return try RecordFileName.names(in: directory)
            .map { name in
                let path = (directory as NSString).appendingPathComponent(name)
                let result: Result<CrashRecord, CrashRecordError>
                do { result = .success(try CrashRecordReader.read(path: path, sizeLimit: sizeLimit)) } catch let error as CrashRecordError {
                    result = .failure(error)
                } catch {
                    result = .failure(.unreadable(path: path, reason: "\(error)"))
                }
                return RecordEntry(path: path, id: id(of: path), result: result)
            }
    }

    /// Resolves what a user typed for `show`/`export`: a path to a file, or an id in `directory`.
    package static func locate(_ recordOrID: String, in directory: String) -> String? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: recordOrID, isDirectory: &isDirectory), !isDirectory.boolValue {
            return recordOrID
        }
        guard !recordOrID.contains("/") else { return nil }
        for suffix in [RecordFileName.completeExtension, RecordFileName.partialExtension, ""] {
            let path = (directory as NSString).appendingPathComponent(recordOrID + suffix)
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue { return path }
        }
        return nil
    }
}

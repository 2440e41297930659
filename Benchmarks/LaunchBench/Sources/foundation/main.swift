// foundation: the baseline of analytics. Foundation, really used (a Date, formatted).
//   foundation     prints "foundation objects=N date=D"
import Foundation
import LaunchSupport

print("foundation objects=\(loadedSharedObjects()) date=\(Date())")

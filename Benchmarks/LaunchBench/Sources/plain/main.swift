// plain: the baseline of capture and reporter (and of analytics run Sentry-only). The standard library and Glibc only, no Foundation.
//   plain        prints "plain objects=N" (N: shared objects loaded)
import LaunchSupport

print("plain objects=\(loadedSharedObjects())")

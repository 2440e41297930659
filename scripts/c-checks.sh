#!/usr/bin/env bash
# Guards for the C code (the C core must build warning-free and pass ASan + UBSan), run by scripts/test.sh:
#  1. every C target compiles with -Wall -Wextra and not one warning, as debug and as release builds
#     compile it (Package.swift adds -Wall -Wextra to every C target; here -Werror makes one fail);
#  2. the C core under AddressSanitizer + UndefinedBehaviorSanitizer: CShims and its test driver
#     (Tests/CShimsSanitizerTests) built with -fsanitize=address,undefined, then run. Any sanitizer
#     report, or a scenario whose child dies otherwise than expected, fails this script.
#   scripts/c-checks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build-sanitizers
mkdir -p "$out"

# Every C target: a directory of Package.swift's targets that holds .c files (as the manifest
# finds them), and the include directories of all of them.
c_dirs=()
for dir in CShims Sources/*/; do
  dir="${dir%/}"
  [ -n "$(find "$dir" -name '*.c' -print -quit)" ] && c_dirs+=("$dir")
done
# CShims' files are in folders by concern and include the headers at its top (the manifest's
# headerSearchPath).
includes=(-I CShims)
for dir in "${c_dirs[@]}"; do [ -d "$dir/include" ] && includes+=(-I "$dir/include"); done

echo "== -Wall -Wextra -Werror over every C target (${c_dirs[*]}), debug and release flags"
while IFS= read -r file; do
  clang -fsyntax-only -Wall -Wextra -Werror -DSWIFT_PACKAGE=1 -fblocks -O0 -DDEBUG=1 "${includes[@]}" "$file"
  clang -fsyntax-only -Wall -Wextra -Werror -DSWIFT_PACKAGE=1 -fblocks -O2 "${includes[@]}" "$file"
done < <(find "${c_dirs[@]}" -name '*.c' | sort)
echo "   no warnings"

echo "== CShims under AddressSanitizer and UndefinedBehaviorSanitizer (Tests/CShimsSanitizerTests)"
# The ASan runtime as a shared library (-shared-libasan): CShims defines pthread_create in the
# executable and calls the real one through dlsym(RTLD_NEXT). With the
# static runtime, ASan's own pthread_create is in the executable too, so RTLD_NEXT skips it and
# ASan never learns of the threads (and aborts at their pthread_join); with the shared one, the
# next definition is ASan's, which then calls libc's, the order a normal program has.
# -fsanitize-address-use-after-return=never: no fake stacks (off at run time anyway), so no call
# into the runtime in every prologue, where a stack overflow would otherwise sometimes fault.
# -rdynamic: the driver names frames with dladdr; -Wl,--build-id: records carry build-ids.
runtime_dir="$(dirname "$(clang -print-file-name=libclang_rt.asan-$(uname -m).so)")"
start=$SECONDS
clang -g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls \
  -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-address-use-after-return=never \
  -shared-libasan -fuse-ld=lld -Wl,-rpath,"$runtime_dir" -Wl,--build-id -rdynamic \
  -Wall -Wextra -Werror -I CShims -I CShims/include -I Sources/CCrashRecordLayout/include \
  Tests/CShimsSanitizerTests/cshims_sanitizer_tests.c $(find CShims -name '*.c' | sort) Sources/CCrashRecordLayout/layout.c -lz -lpthread \
  -o "$out/cshims-sanitizer-tests"
echo "   built in $((SECONDS - start)) s"
start=$SECONDS
"$out/cshims-sanitizer-tests"
echo "   ran in $((SECONDS - start)) s"

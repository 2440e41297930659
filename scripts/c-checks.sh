#!/usr/bin/env bash
# Guards for the C code (issue 18), run by scripts/test.sh: every C target compiles with -Wall
# -Wextra and not one warning, as debug and as release builds compile it (Package.swift adds
# -Wall -Wextra to every C target; here -Werror makes one fail).
#   scripts/c-checks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# Every C target: a directory of Package.swift's targets that holds .c files (as the manifest
# finds them), and the include directories of all of them.
c_dirs=()
for dir in CShims Sources/*/; do
  dir="${dir%/}"
  compgen -G "$dir/*.c" >/dev/null && c_dirs+=("$dir")
done
includes=()
for dir in "${c_dirs[@]}"; do [ -d "$dir/include" ] && includes+=(-I "$dir/include"); done

echo "== -Wall -Wextra -Werror over every C target (${c_dirs[*]}), debug and release flags"
for dir in "${c_dirs[@]}"; do
  for file in "$dir"/*.c; do
    clang -fsyntax-only -Wall -Wextra -Werror -DSWIFT_PACKAGE=1 -fblocks -O0 -DDEBUG=1 "${includes[@]}" "$file"
    clang -fsyntax-only -Wall -Wextra -Werror -DSWIFT_PACKAGE=1 -fblocks -O2 "${includes[@]}" "$file"
  done
done
echo "   no warnings"

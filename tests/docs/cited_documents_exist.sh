#!/usr/bin/env bash
# Every document the project cites exists: each relative link in a Markdown
# file ([text](path), anchors dropped) and each docs/... or *.md path named
# in a source comment or script must name a file or folder of the
# repository. Prints each one that does not, and fails.
#   tests/docs/cited_documents_exist.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
missing=0

# Markdown links, relative to the file that holds them.
while IFS= read -r file; do
  while IFS= read -r target; do
    target=${target%%#*}
    [ -z "$target" ] && continue
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    if [ ! -e "$(dirname "$file")/$target" ]; then
      echo "$file: link to $target, which does not exist"
      missing=1
    fi
  done < <(grep -oE '\]\([^)[:space:]]+\)' "$file" | sed -E 's/^\]\((.*)\)$/\1/')
done < <(git ls-files '*.md')

# Paths of documents named in code, scripts and build files, relative to
# the repository's root.
while IFS=: read -r file path; do
  if [ ! -e "$path" ]; then
    echo "$file: names $path, which does not exist"
    missing=1
  fi
done < <(git ls-files '*.cc' '*.h' '*.c' '*.sh' '*.py' '*.toml' 'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run' |
         xargs grep -oE '(^|[^A-Za-z0-9_./-])[A-Za-z0-9_./-]*(docs/[A-Za-z0-9_./-]+|README|BENCHMARKS|CONTRIBUTING)\.md' /dev/null |
         sed -E 's|:[^A-Za-z0-9_./-]|:|; s|:/|:|' | grep -v ':\.\./' |
         sort -u)

[ "$missing" = 0 ] && echo "every cited document exists"
exit "$missing"

#!/usr/bin/env bash
# Every "ARCHITECTURE.md §N" reference in the tree (code, CMake, scripts, help text, README) is
# written "docs/ARCHITECTURE.md §N" and names a numbered heading of docs/ARCHITECTURE.md
# ("## 4. Contracts", "### 4.3 Exit codes"). Lists every bad reference with file and line.
set -euo pipefail
root=${1:?usage: check_architecture_refs.sh SOURCE_DIR}
cd "$root"
doc=docs/ARCHITECTURE.md
if [[ ! -f $doc ]]; then
  echo "$doc is missing" >&2
  exit 1
fi
sections=$(sed -nE 's/^#{2,4} ([0-9]+(\.[0-9]+)*)\.? .*/\1/p' "$doc")
# The tree's files: git's list in a checkout, else every file outside build folders.
if ! files=$(git ls-files -co --exclude-standard 2>/dev/null); then
  files=$(find . -type f -not -path './.git/*' -not -path './build*' -not -path './.venv/*' |
    sed 's|^\./||')
fi
refs=$(grep -vxF "$doc" <<<"$files" | tr '\n' '\0' |
  xargs -0 -r grep -noE '(\.\./shared/|docs/)?ARCHITECTURE\.md( §[0-9]+(\.[0-9]+)*([,;]? (and )?§[0-9]+(\.[0-9]+)*)*)?' ||
  true)
bad=0
checked=0
while IFS= read -r hit; do
  [[ -z $hit || ($hit != *§* && $hit != *../shared/*) ]] && continue
  where=${hit%:*}
  ref=${hit##*:}
  if [[ $ref != docs/ARCHITECTURE.md* ]]; then
    echo "$where: '$ref' should point at docs/ARCHITECTURE.md" >&2
    bad=$((bad + 1))
    continue
  fi
  for number in $(grep -oE '§[0-9]+(\.[0-9]+)*' <<<"$ref" | tr -d '§'); do
    checked=$((checked + 1))
    if ! grep -qxF "$number" <<<"$sections"; then
      echo "$where: §$number is not a section of $doc" >&2
      bad=$((bad + 1))
    fi
  done
done <<<"$refs"
if ((bad > 0)); then
  echo "$bad bad reference(s); sections of $doc: $(tr '\n' ' ' <<<"$sections")" >&2
  exit 1
fi
echo "$checked section reference(s) resolve to headings of $doc"

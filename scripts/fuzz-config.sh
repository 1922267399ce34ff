#!/usr/bin/env bash
# The `config` fuzz target, seeded with every configuration in this repository: switch files
# (first byte 0), the collector's (1) and the lab files (2), with a dictionary of their keys and
# section headers (fuzz/config.dict). Needs a nightly toolchain and cargo-fuzz.
#
#   scripts/fuzz-config.sh [SECONDS]          (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-300}
corpus=fuzz/corpus/config
mkdir -p "$corpus"
i=0
seed() { { printf "$1"; cat "$2"; } >"$corpus/seed-$i"; i=$((i + 1)); }
for f in config/*.toml; do
    case $f in
    *collector*) seed '\001' "$f" ;;
    *) seed '\000' "$f" ;;
    esac
done
while IFS= read -r f; do seed '\002' "$f"; done < <(find config/labs -name '*.toml' | sort)
# A file may take a few KB (the §5.2 lab file is 17 KB); the malloc limit makes a size a file
# names that the build allocates without bound a crash.
exec cargo +nightly fuzz run config -- -max_total_time="$secs" -max_len=20000 \
    -dict=fuzz/config.dict -rss_limit_mb=4096 -malloc_limit_mb=1024

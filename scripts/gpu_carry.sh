#!/usr/bin/env bash
# Fills .gpu/ (git-ignored), the folder the device tool carries to a GPU machine (carry: [".gpu"]), with what GPU images
# lack and pkb needs, taken from this (Debian) machine's packages:
#   .gpu/bwrap   bubblewrap, without which no candidate runs (scripts/gpu_check.sh sets PKB_BWRAP to it);
#   .gpu/serve/  a prefix (include/, lib/, lib/pkgconfig/, link/) with cpp-httplib, SQLite and the headers
#                cpp-httplib's include (OpenSSL, zlib, brotli), so that pkb serve builds there (gpu_check.sh uses it).
# Usage: scripts/gpu_carry.sh (idempotent; ~8 MB).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/.gpu
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
mkdir -p "$dest"
bwrap=$(command -v bwrap) || { echo "gpu_carry.sh: no bwrap here (apt-get install bubblewrap)" >&2; exit 1; }
cp -f "$bwrap" "$dest/bwrap"

serve=$dest/serve
rm -rf "$serve"
mkdir -p "$serve/include" "$serve/lib/pkgconfig"
for h in httplib.h sqlite3.h sqlite3ext.h zlib.h zconf.h; do cp "/usr/include/$h" "$serve/include/"; done
cp -r /usr/include/openssl /usr/include/brotli "$serve/include/"
cp "/usr/include/$multiarch/openssl/"*.h "$serve/include/openssl/"  # configuration.h: the multiarch part
# cpp-httplib by its soname and its link name (-lcpp-httplib at build time, libcpp-httplib.so.0.11 at run time, found
# through LD_LIBRARY_PATH there: GPU images rarely have this version). SQLite for linking only (link/, never on the
# library path): at run time the image's own libsqlite3.so.0, a newer one of the same soname, serves, and a copy on
# LD_LIBRARY_PATH would shadow it for every program. cpp-httplib's other libraries (OpenSSL 3, zlib, brotli) are the
# image's own; only their headers and .pc files travel.
mkdir -p "$serve/link"
cp -P "$libdir"/libcpp-httplib.so* "$serve/lib/"
cp -L "$libdir/libsqlite3.so" "$serve/link/libsqlite3.so"
for pc in cpp-httplib sqlite3 openssl libssl libcrypto zlib libbrotlicommon libbrotlidec libbrotlienc; do
  # Every path in the .pc under the carried prefix; pkg-config's ${pcfiledir} keeps it valid wherever .gpu lands.
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' -e "s|^libdir=.*|libdir=\${prefix}/lib|" \
    -e "s|^includedir=.*|includedir=\${prefix}/include|" "$libdir/pkgconfig/$pc.pc" >"$serve/lib/pkgconfig/$pc.pc"
done
echo "gpu_carry.sh: $(du -sh "$dest" | cut -f1) in $dest (bwrap, serve: cpp-httplib $(pkg-config --modversion cpp-httplib), SQLite $(pkg-config --modversion sqlite3))"

#!/usr/bin/env bash
# Regenerates screenshots/*.png from the snapshot fixtures (src/app/view/tests.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v rsvg-convert >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librsvg2-bin fonts-dejavu-core >/dev/null
fi
tmp=$(mktemp -d)
MERLYA_SCREENSHOT_DIR="$tmp" cargo test --locked --lib write_screenshots -- --ignored --exact app::view::tests::write_screenshots
mkdir -p screenshots
for svg in "$tmp"/*.svg; do
  rsvg-convert "$svg" -o "screenshots/$(basename "${svg%.svg}").png"
done
rm -rf "$tmp"
ls screenshots/

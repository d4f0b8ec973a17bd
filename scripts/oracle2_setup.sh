#!/usr/bin/env bash
# Set up the torch 2.x oracle: a Debian unstable chroot with Debian's own python3-torch (2.x),
# python3-transformers (5.x) and python3-accelerate (1.x).
#
# Dev-time only. CI and the C++ build never need it: the generators' outputs are committed under
# fixtures/oracle2/ and the tests read those.
#
#   scripts/oracle2_setup.sh [DIR]        (default DIR: /var/tmp/shardcheck-sid)
#
# Then run a generator inside it, e.g.
#   scripts/oracle2_run.sh DIR python3 scripts/fsdp2_oracle.py --out fixtures/oracle2
# (oracle2_run.sh bind-mounts this repository at /repo and /proc, /dev/shm for gloo.)
#
# The mirror is the one apt uses on this machine (first deb.debian.org-style URI in sources), so
# the chroot comes from the same place as the host's packages. Idempotent: an existing DIR with
# torch importable is left as it is.
set -euo pipefail

dir=${1:-/var/tmp/shardcheck-sid}

mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
           | grep -E '^(URIs:|deb )' | grep -oE 'https?://[^ ]+' | grep -v security | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

if [ -x "$dir/usr/bin/python3" ] && chroot "$dir" python3 -c 'import torch, transformers, accelerate' 2>/dev/null; then
  chroot "$dir" python3 -c 'import torch, transformers, accelerate; print("oracle2_setup: ready:", "torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__)'
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >/dev/null
fi

if [ ! -x "$dir/usr/bin/apt-get" ]; then
  echo "oracle2_setup: debootstrap sid from $mirror into $dir" >&2
  debootstrap --variant=minbase sid "$dir" "$mirror"
fi

mount_if_needed() { mountpoint -q "$2" || mount --bind "$1" "$2"; }
mkdir -p "$dir/proc" "$dir/dev/shm"
mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true

chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false update >/dev/null
chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  python3-torch python3-transformers python3-accelerate python3-safetensors python3-numpy >/dev/null
chroot "$dir" python3 -c 'import torch, transformers, accelerate; print("oracle2_setup: ok:", "torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__)'

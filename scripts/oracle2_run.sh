#!/usr/bin/env bash
# Run a command inside the torch 2.x oracle chroot (scripts/oracle2_setup.sh) with this repository
# bind-mounted at /repo (the working directory), /proc and /dev/shm mounted (gloo needs both).
#   scripts/oracle2_run.sh [--root DIR] CMD [ARGS...]
# ORACLE2_MOUNT=NAME mounts the repository at /NAME instead (default repo): several worktrees can use
# one chroot at once, each at its own mount point. A mount point already holding another directory is
# an error, never silently the wrong checkout.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=/var/tmp/shardcheck-sid
if [[ ${1:-} == --root ]]; then dir=$2; shift 2; fi
[[ -x $dir/usr/bin/python3 ]] || { echo "oracle2_run: no chroot at $dir; run scripts/oracle2_setup.sh $dir" >&2; exit 2; }
mnt=${ORACLE2_MOUNT:-repo}
mkdir -p "$dir/$mnt" "$dir/proc" "$dir/dev/shm"
mountpoint -q "$dir/$mnt" || mount --bind "$repo" "$dir/$mnt"
if [[ $(stat -c %d:%i "$dir/$mnt") != $(stat -c %d:%i "$repo") ]]; then
  echo "oracle2_run: $dir/$mnt holds another checkout; set ORACLE2_MOUNT=<name> for this one ($repo)" >&2; exit 2
fi
mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
mountpoint -q "$dir/dev/shm" || mount -t tmpfs shm "$dir/dev/shm"
[[ -e $dir/dev/null ]] || mknod -m 666 "$dir/dev/null" c 1 3
[[ -e $dir/dev/urandom ]] || mknod -m 444 "$dir/dev/urandom" c 1 9
exec chroot "$dir" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 PYTHONHASHSEED=0 USE_LIBUV=0 \
  OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 \
  /bin/sh -c 'cd "/$0" && exec "$@"' "$mnt" "$@"

# Mounts of the ROCm build root (sourced by amd_release.sh and hip/ci/amd.sh): /proc (hipconfig
# reads /proc/self/exe) and the repository at ROOT/src. root_unmount takes every mount under the
# root away again; scripts/amd_root.sh refuses to delete a root while anything is mounted in it.
root_mount_repo() {  # ROOT REPO
  mkdir -p "$1/src" "$1/proc"
  mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"
  mountpoint -q "$1/src" || mount --bind "$2" "$1/src"
}
root_mounts() {  # ROOT: mount points at or under it, deepest first
  local r
  r=$(realpath "$1")
  awk -v r="$r" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
root_unmount() {  # ROOT
  local m
  for m in $(root_mounts "$1"); do umount -l "$m" || true; done
}

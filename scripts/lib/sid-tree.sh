# The builder shared by scripts/godot-tree and scripts/wine-tree: builds,
# once per machine, a Debian unstable tree with some packages, and prints its
# path. Sourced by such a script, after it has set
#
#   name      its name, for messages (godot-tree)
#   tree      where the tree lives
#   packages  (array) the unstable packages to install, --no-install-recommends
#   recipe    the stamp's first line: change it and every machine builds again
#
# and defined
#
#   sid_tree_finish DIR   run as root, after the install, in the build's
#                         namespaces, with DIR's /proc and /dev mounted: checks
#                         the tree (and prepares what each use would
#                         otherwise pay for), prints the stamp's second line
#                         (say, the program's version), fails when it is wrong
#
# then it calls: sid_tree "$@"
#
#   SCRIPT          build the tree when missing, print its path
#   SCRIPT --path   print the path only
#
# A complete tree (its stamp's first line is the recipe) is reused at once. A
# tree is built in a temporary directory and renamed into place when done, so
# an interrupted build is never taken for a complete one; concurrent callers
# wait for one build (a lock). The build runs in its own mount and PID
# namespaces, so nothing it mounts or starts outlives it, even when it is
# killed. Needs root, debootstrap and unshare (util-linux).
# $CROSSCODE_DEBIAN_MIRROR overrides the mirror (default deb.debian.org).

sid_tree_stamp=.crosscode-tree
sid_tree_mirror=${CROSSCODE_DEBIAN_MIRROR:-http://deb.debian.org/debian}

sid_tree_complete() { [ -f "$1/$sid_tree_stamp" ] && [ "$(head -n 1 "$1/$sid_tree_stamp")" = "$recipe" ]; }

# Inside the build's own namespaces (see sid_tree): bootstrap, then install.
sid_tree_build_inside() {
  local dir=$1 line
  debootstrap --variant=minbase sid "$dir" "$sid_tree_mirror" >&2
  # This mirror's unstable Release file can read as expired.
  printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
    >"$dir/etc/apt/apt.conf.d/99crosscode"
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
  mount --rbind /dev "$dir/dev"
  export DEBIAN_FRONTEND=noninteractive
  chroot "$dir" apt-get update >&2
  chroot "$dir" apt-get install -y --no-install-recommends "${packages[@]}" >&2
  chroot "$dir" apt-get clean
  rm -rf "$dir"/var/lib/apt/lists/*
  line=$(set -e; sid_tree_finish "$dir") # a failing command fails it
  printf '%s\n%s\nbuilt %s from %s\n' "$recipe" "$line" "$(date -u +%FT%TZ)" "$sid_tree_mirror" >"$dir/$sid_tree_stamp"
}

sid_tree() {
  if [ "${1-}" = "--path" ]; then
    echo "$tree"
    return 0
  fi
  if [ "${1-}" = "--build-inside" ]; then
    sid_tree_build_inside "$2"
    return 0
  fi
  if sid_tree_complete "$tree"; then
    echo "$tree"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || { echo "$name: building the tree needs root (debootstrap, chroot)" >&2; return 1; }
  local prog
  for prog in debootstrap unshare chroot flock; do
    command -v "$prog" >/dev/null || { echo "$name: $prog is missing (scripts/deps installs debootstrap)" >&2; return 1; }
  done

  mkdir -p "$(dirname "$tree")"
  exec 9>"$tree.lock"
  flock 9 # one build at a time; who waited finds the tree complete
  if sid_tree_complete "$tree"; then
    echo "$tree"
    return 0
  fi
  # Left by an interrupted build (no other build runs: we hold the lock). Its
  # mounts died with its namespace; --one-file-system guards against any other.
  local old
  for old in "$tree".build.* "$tree".old.*; do
    [ -e "$old" ] && rm -rf --one-file-system "$old"
  done

  local start
  start=$(date +%s)
  echo "$name: building the Debian unstable tree with ${packages[*]} in $tree (a few minutes, once per machine)" >&2
  sid_tree_build=$(mktemp -d "$tree.build.XXXXXX")
  trap 'rm -rf --one-file-system "$sid_tree_build"' EXIT
  chmod 755 "$sid_tree_build"
  unshare --mount --propagation private --pid --fork --kill-child -- "$0" --build-inside "$sid_tree_build"
  if [ -e "$tree" ]; then
    # A tree of an older recipe: set aside, then removed.
    mv -T "$tree" "$tree.old.$$"
  fi
  mv -T "$sid_tree_build" "$tree"
  trap - EXIT
  rm -rf --one-file-system "$tree.old.$$"
  echo "$name: built in $(($(date +%s) - start)) s: $(sed -n 2p "$tree/$sid_tree_stamp")" >&2
  echo "$tree"
}

#!/bin/sh
# The runtime user of the training image, by a rule that needs no tool of the base (useradd is
# not in every minimal base): root leaves everything as it is; another name gets its own
# /etc/passwd and /etc/group entries at UID (group id = UID), a home, and /workspace.
#   add-user.sh NAME UID
# Exit: 0 done; 1 UID is taken by another user; 2 usage.
set -eu
if [ $# -ne 2 ]; then
  echo "usage: add-user.sh NAME UID" >&2
  exit 2
fi
name=$1 uid=$2
mkdir -p /workspace
[ "$name" = root ] && exit 0
if getent passwd "$name" >/dev/null; then
  echo "add-user: $name exists" >&2
else
  if other=$(getent passwd "$uid"); then
    echo "add-user: uid $uid is taken by ${other%%:*}; pass --build-arg HETRUN_UID=<free uid>" >&2
    exit 1
  fi
  getent group "$uid" >/dev/null || echo "$name:x:$uid:" >>/etc/group
  echo "$name:x:$uid:$uid::/home/$name:/usr/sbin/nologin" >>/etc/passwd
fi
mkdir -p "/home/$name"
chown "$uid:$uid" "/home/$name" /workspace

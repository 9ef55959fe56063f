# recon8s: client-side encryption of what the jobs write, with rclone's crypt remote "secure" (NaCl
# secretbox, XSalsa20-Poly1305, each 64 KiB block authenticated; names as they are): over the object
# store's prefix (store.sh, s3.encryption) or over a backup volume's directory (backup.sh,
# backup.encryption). Nothing written through it is readable without the key, and what was not written
# with it (changed, swapped, written without encryption or with another key) fails to read, naming the
# file, before any of it is used. Never enable xtrace.
# shellcheck shell=bash

# crypt_remote REMOTE KEY_FILE WORDS IMAGE_FIELD: configures the crypt remote "secure" over REMOTE (an
# rclone remote path, or a local directory) with the passphrase in KEY_FILE, which WORDS name in a
# message; IMAGE_FIELD is the spec field whose image copies rclone into the pod. The key reaches rclone
# (obscured, as its configuration takes it) in rclone's own environment only (crypt_rclone): never a
# command line, this script's environment, a file or a message.
crypt_secret=
crypt_remote() {
  local remote=$1 key_file=$2 words=$3 image_field=$4 key
  [[ -r $key_file ]] || die "cannot read $words"
  key=$(<"$key_file")
  # shellcheck disable=SC2154 # layout.sh's, through common.sh
  valid encryption-key "$key" ||
    die "$words is not $RECON8S_GRAMMAR_WORDS_encryption_key: it has ${#key} characters"
  command -v rclone >/dev/null || die "rclone is not on PATH ($image_field copies it into the pod)"
  crypt_secret=$(printf '%s' "$key" | rclone obscure -) || crypt_secret=
  [[ -n $crypt_secret ]] || die "rclone cannot take $words"
  export RCLONE_CONFIG_SECURE_TYPE=crypt RCLONE_CONFIG_SECURE_REMOTE=$remote \
    RCLONE_CONFIG_SECURE_FILENAME_ENCRYPTION=off RCLONE_CONFIG_SECURE_DIRECTORY_NAME_ENCRYPTION=false \
    RCLONE_CONFIG_SECURE_SUFFIX=none
}

# crypt_rclone ARGS...: rclone with the crypt remote's key in its environment alone.
crypt_rclone() {
  RCLONE_CONFIG_SECURE_PASSWORD=$crypt_secret rclone "$@"
}

# crypt_failure WHY: WHY, with what it means when rclone's crypt could not open a file.
crypt_failure() {
  local why=$1
  if [[ $why =~ bad\ password|not\ an\ encrypted\ file|too\ short\ to\ be\ encrypted ]]; then
    why+=": it was not written with this encryption key (another key, no encryption, or changed since)"
  fi
  printf '%s' "$why"
}

#!/bin/sh
# A long-lived Choria Provisioner helper in POSIX sh for the JSON-lines pool mode: one request
# line in, one reply line out, until stdin closes. Environment: BROKER_URL.
# Relies on the fixed request layout: compact JSON whose first key is "identity".
set -u

broker=${BROKER_URL:-nats://broker.example.net:4222}
broker_json=$(printf '%s' "$broker" | sed 's/[\\"]/\\&/g')

while IFS= read -r line; do
  [ -z "$line" ] && continue
  identity=$(printf '%s\n' "$line" | sed -n 's/^{"identity":"\([^"]*\)".*/\1/p')
  case $identity in
    '' | *[!A-Za-z0-9._-]*)
      echo "pool-helper.sh: unusable identity in request" >&2
      printf '{"defer":true,"msg":"no usable identity in the request"}\n'
      continue
      ;;
  esac
  printf '{"msg":"configured %s by pool helper %s","configuration":{"identity":"%s","loglevel":"info","plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"%s"}}\n' \
    "$identity" "$$" "$identity" "$broker_json"
done

#!/bin/sh
# A minimal Choria Provisioner helper in POSIX sh: reads the request on stdin, prints a reply on
# stdout, always exits 0. Environment: BROKER_URL (default nats://broker.example.net:4222).
#
# Without a JSON parser we rely on the request layout, which is fixed: the provisioner writes
# compact JSON whose first key is always "identity". Identities we cannot use safely (anything
# but letters, digits, dot, dash, underscore) are deferred rather than pasted into JSON.
set -u

broker=${BROKER_URL:-nats://broker.example.net:4222}
request=$(cat)
identity=$(printf '%s\n' "$request" | sed -n 's/^{"identity":"\([^"]*\)".*/\1/p')

case $identity in
  '' | *[!A-Za-z0-9._-]*)
    echo "plain-helper.sh: unusable identity in request" >&2
    printf '{"defer":true,"msg":"no usable identity in the request"}\n'
    exit 0
    ;;
esac

# JSON-escape the broker URL (backslashes and double quotes).
broker_json=$(printf '%s' "$broker" | sed 's/[\\"]/\\&/g')

printf '{"defer":false,"msg":"configured %s","configuration":{"identity":"%s","loglevel":"info","plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"%s","registerinterval":"300"}}\n' \
  "$identity" "$identity" "$broker_json"

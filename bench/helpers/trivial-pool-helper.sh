#!/bin/sh
# The JSON-lines twin of trivial-helper.sh for helper_mode pool: one request line in, the same
# fixed configuration as one reply line out, until stdin closes. Only shell builtins.
while IFS= read -r request; do
  printf '{"configuration":{"plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"nats://broker.example.net:4222"}}\n'
done

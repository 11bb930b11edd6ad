#!/bin/sh
# The trivial one-process-per-node helper of the benchmark: reads the request (one line without a
# trailing newline, so `read` returns non-zero at EOF after filling the variable) and prints a fixed
# configuration. Only shell builtins, so a run costs one exec of /bin/sh.
IFS= read -r request || true
printf '{"configuration":{"plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"nats://broker.example.net:4222"}}\n'

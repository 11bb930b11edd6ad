#!/usr/bin/perl
# The JSON-lines twin of trivial-helper.sh for helper_mode pool, as a long-lived helper is usually
# written: in a language whose input is buffered. One request line in, the same fixed configuration
# as one reply line out, until stdin closes.
#
# Why not the shell (trivial-pool-helper.sh, kept for comparison): a shell's `read` must not consume
# past the newline, so on a pipe it reads one byte per system call; a request of a few KB then costs
# thousands of system calls, over 1 ms of CPU per node on some VMs. Perl reads what the pipe holds in
# one call.
$| = 1; # flush each reply at once: the provisioner waits for it
while (my $request = <STDIN>) {
  print qq({"configuration":{"plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"nats://broker.example.net:4222"}}\n);
}

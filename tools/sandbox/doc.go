// Package sandbox runs a process confined by bubblewrap (Debian's
// bubblewrap package, the bwrap program) as a state's Tools block asks
// for it (agents.SandboxLimits). It works on Linux only; elsewhere every
// function refuses with an error saying that sandboxes need Linux.
//
// Command builds the process; Available says whether this machine can
// run it at all. Nothing is ever run unsandboxed: a Spec that cannot be
// honoured is refused with an error naming the field, mount or bucket.
//
// # What a sandboxed process can reach
//
// Files. The process sees a root of its own that holds only:
//
//   - /usr, /etc, /bin, /sbin, /lib, /lib32 and /lib64 of the machine,
//     read-only (each that exists; a host symlink such as Debian's
//     /bin -> usr/bin becomes the same symlink). It can therefore READ
//     every file under them that the server's user can read: reading is
//     not confined there. The known secrets /etc/shadow, /etc/gshadow,
//     their backups and /etc/ssl/private are hidden; other files in
//     /etc readable by the server's user (such as SSH host keys when the
//     server runs as root) are not.
//   - a fresh /dev (null, zero, full, random, urandom, tty, pts, shm:
//     bwrap's own writable tmpfs, gone with the process) and a fresh
//     /proc of its own PID namespace. There is no /sys.
//   - /tmp: an empty writable tmpfs that disappears with the process
//     (its size is bounded only by the machine's memory and the cgroup).
//   - each Mount of the limits at its Target: read-write, or read-only
//     when ReadOnly. Writes to a read-write mount reach the bucket's
//     folder on the machine.
//
// Everything else — /root, /home, /var, /srv, /opt, /work, /run, /sys,
// the server's own files and other mounts of the machine — is not there.
// The root itself is read-only: the process can write only to /tmp,
// /dev (/dev/shm) and read-write mounts, and only the mounts outlive it.
//
// The process runs as the server's user (uid 0 inside when the server
// runs as root) in a user namespace of its own, with every capability
// dropped and no_new_privs set, so it gains no privilege by running a
// setuid program and cannot remount anything. Files it creates in a
// read-write mount belong to the server's user.
//
// Network. Without Limits.Network the process has a network namespace
// of its own holding only a loopback interface: it reaches no host, not
// even the machine's own 127.0.0.1. With Network it shares the
// machine's network (every host and port the machine can reach, its
// loopback services and abstract Unix sockets included: confining hosts
// is the Domains limit's job, not this package's).
//
// Processes. The process is PID 1's child in a PID namespace of its own
// (it sees and signals only its own descendants), in new IPC, UTS and
// cgroup namespaces, in a new session (it cannot push input to the
// server's terminal), with an environment that is exactly Spec.Env. It
// and all its descendants are killed when bwrap or the server dies, when
// the Command's context is done, or when Limits.Timeout passes.
//
// # Limits
//
//   - Memory bounds the address space of the command (RLIMIT_AS, both
//     soft and hard) and, under a cgroup (below), memory.max of the whole
//     sandbox. A program that reserves much more address space than it
//     uses needs a Memory above its reservation: a Go program does not
//     start below about 768 MiB, a JVM needs its heap plus its metaspace.
//   - CPU bounds the command's CPU time (RLIMIT_CPU, whole seconds,
//     rounded up): it gets SIGXCPU at the limit and SIGKILL one second of
//     CPU later. The bound is per process: each child it starts has its
//     own. The cgroup does not bound CPU.
//   - Timeout kills the sandbox when it passes; Wait then returns an
//     error wrapping ErrTimeout.
//
// RLIMIT_AS and RLIMIT_CPU are applied by util-linux prlimit
// (/usr/bin/prlimit) run inside the sandbox just before the command, so
// they bound the command and the processes it starts but not bwrap.
//
// Cgroups. When a cgroup v2 directory is delegated to the server (see
// Spec.CgroupParent), each process gets a fresh child cgroup with
// memory.max (and memory.swap.max 0) set to Memory and pids.max 512, is
// started inside it (clone3 with CLONE_INTO_CGROUP, so no process ever
// runs outside it), and the cgroup is killed and removed once the
// process has ended. Where no such directory is usable the sandbox runs
// without a cgroup and Cmd.Cgroup says why; the rlimits still apply, but
// the number of processes is then not bounded.
package sandbox

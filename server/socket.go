package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of the unix socket; match them with errors.Is.
var (
	// ErrSocketInUse: ListenUnix found a process answering on the socket.
	ErrSocketInUse = errors.New("another process is serving on this socket")
	// ErrSocketOwner: CheckSocketOwner found a socket owned by someone
	// other than the client or root.
	ErrSocketOwner = errors.New("socket owned by another user")
)

// staleDialTimeout bounds ListenUnix's check that an existing socket is
// stale. A socket with no listener refuses at once; one that makes us
// wait has a listener.
const staleDialTimeout = time.Second

// ListenUnix listens on a unix socket at path whose file has mode 0600,
// whatever the umask, so only the server's user (and root) may connect.
// An existing socket some process still answers on is refused
// (ErrSocketInUse), a stale one is removed, and any other file at path is
// left alone and refused. Closing the listener removes the socket file.
//
// The socket is bound inside a new directory of mode 0700 beside path,
// made 0600 there, and then hard-linked to path. At no moment can another
// user connect to it: while its mode is the umask's, it sits in a
// directory only we can enter. Changing the umask around bind would
// affect every goroutine of the process, and fchmod on a socket's
// descriptor does not change the mode of the file bind creates.
func ListenUnix(path string) (net.Listener, error) {
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".aslrun-sock-")
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it unlinks path instead: see socketListener.Close
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Link, unlike rename, fails if path exists: a server that started
	// since removeStaleSocket keeps its socket.
	if err := os.Link(tmp, path); err != nil {
		ln.Close()
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("listen on %s: %w", path, ErrSocketInUse)
		}
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return &socketListener{UnixListener: ln, path: path, file: fi}, nil
}

// removeStaleSocket removes a socket at path that no process answers on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("listen on %s: a file that is not a socket is there (%v); remove it or choose another path", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		c.Close()
		return fmt.Errorf("listen on %s: %w", path, ErrSocketInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("listen on %s: cannot tell whether the socket there is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("listen on %s: remove the stale socket: %w", path, err)
	}
	return nil
}

// socketListener removes its socket file on Close, if path still names it.
type socketListener struct {
	*net.UnixListener
	path string
	file os.FileInfo
}

func (l *socketListener) Close() error {
	if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.file) {
		os.Remove(l.path)
	}
	return l.UnixListener.Close()
}

type peerUIDKey struct{}

// ConnContext records the uid of a unix socket's peer (SO_PEERCRED) in
// ctx, for PeerUID and LocalPrincipal; other connections leave ctx as it
// is. Use it as an http.Server's ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return ctx
	}
	return context.WithValue(ctx, peerUIDKey{}, int(cred.Uid))
}

// PeerUID returns the unix socket peer's uid ConnContext recorded in ctx.
func PeerUID(ctx context.Context) (uid int, ok bool) {
	uid, ok = ctx.Value(peerUIDKey{}).(int)
	return uid, ok
}

// LocalPrincipal returns the local admin when ctx is a request over the
// unix socket from the server process's own uid or root; false otherwise.
func LocalPrincipal(ctx context.Context) (Principal, bool) {
	uid, ok := PeerUID(ctx)
	if !ok || (uid != os.Getuid() && uid != 0) {
		return Principal{}, false
	}
	return Principal{Name: fmt.Sprintf("local admin (uid %d)", uid), Role: RoleAdmin, Local: true}, true
}

// CheckSocketOwner is for clients: it refuses a socket at path that is
// not a socket, or not owned by the client's own uid or root
// (ErrSocketOwner), so that a client does not hand its requests to
// another user's server.
func CheckSocketOwner(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("socket %s: not a socket (%v)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("socket %s: cannot read its owner", path)
	}
	return checkOwnerUID(path, int(st.Uid), os.Getuid())
}

// checkOwnerUID allows a socket owned by uid me or root.
func checkOwnerUID(path string, owner, me int) error {
	if owner != me && owner != 0 {
		return fmt.Errorf("socket %s: %w: owner uid %d, want uid %d or root", path, ErrSocketOwner, owner, me)
	}
	return nil
}

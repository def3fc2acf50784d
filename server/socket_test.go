package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// socketDir returns a temporary directory for sockets. Socket paths are
// limited to about 100 bytes, which t.TempDir under a long test name can
// pass, so it is made directly under os.TempDir.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// listenSocket calls ListenUnix and closes the listener when the test ends.
func listenSocket(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix(%s): %v", path, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestListenUnixMode changes the process's umask, so it does not run in
// parallel with other tests.
func TestListenUnixMode(t *testing.T) {
	for _, umask := range []int{0o000, 0o022, 0o077, 0o777} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			dir := socketDir(t)
			path := filepath.Join(dir, "s.sock")
			ln := listenSocket(t, path)
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
				t.Errorf("socket mode = %v, want a socket with mode 0600", fi.Mode())
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the socket (no temporary directory left)", len(entries))
			}
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatalf("dial the socket: %v", err)
			}
			c.Close()
			if err := ln.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Close, Lstat(socket) = %v, want %v", err, fs.ErrNotExist)
			}
		})
	}
}

func TestListenUnixExisting(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "s.sock")
		listenSocket(t, path)
		if ln, err := ListenUnix(path); !errors.Is(err, ErrSocketInUse) {
			if err == nil {
				ln.Close()
			}
			t.Errorf("ListenUnix over a live socket = %v, want %v", err, ErrSocketInUse)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Errorf("the first server's socket no longer answers: %v", err)
		} else {
			c.Close()
		}
	})
	t.Run("stale", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "s.sock")
		old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetUnlinkOnClose(false)
		old.Close() // as a crashed server leaves it
		listenSocket(t, path)
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("dial the new socket: %v", err)
		}
		c.Close()
	})
	t.Run("regular file", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "s.sock")
		if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if ln, err := ListenUnix(path); err == nil {
			ln.Close()
			t.Error("ListenUnix over a regular file = nil error, want a refusal")
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != "keep" {
			t.Errorf("the regular file now reads %q, %v, want it untouched", data, err)
		}
	})
	t.Run("replaced after listen", func(t *testing.T) {
		// Close leaves alone a file at path that is no longer its socket.
		path := filepath.Join(socketDir(t), "s.sock")
		ln, err := ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("other"), 0o600); err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if _, err := os.Stat(path); err != nil {
			t.Errorf("Close removed a file that is not its socket: %v", err)
		}
	})
}

// peerInfo is what the test server says of a request.
type peerInfo struct {
	UID     int
	UIDOK   bool
	Local   Principal
	LocalOK bool
}

// peerServer serves, on ln, each request's PeerUID and LocalPrincipal.
func peerServer(t *testing.T, ln net.Listener) {
	t.Helper()
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var p peerInfo
			p.UID, p.UIDOK = PeerUID(r.Context())
			p.Local, p.LocalOK = LocalPrincipal(r.Context())
			json.NewEncoder(w).Encode(p)
		}),
		ConnContext:       ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		<-done
	})
}

// getPeer asks the test server what it saw of the request.
func getPeer(t *testing.T, c *http.Client, url string) peerInfo {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p peerInfo
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConnContextOverSocket(t *testing.T) {
	path := filepath.Join(socketDir(t), "s.sock")
	peerServer(t, listenSocket(t, path))
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	defer tr.CloseIdleConnections()
	got := getPeer(t, &http.Client{Transport: tr}, "http://aslrun/")
	me := os.Getuid()
	want := peerInfo{UID: me, UIDOK: true, Local: Principal{Name: fmt.Sprintf("local admin (uid %d)", me), Role: RoleAdmin, Local: true}, LocalOK: true}
	if got != want {
		t.Errorf("over the unix socket, the server saw %+v, want %+v", got, want)
	}
}

func TestConnContextOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peerServer(t, ln)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	got := getPeer(t, c, "http://"+ln.Addr().String()+"/")
	if got != (peerInfo{}) {
		t.Errorf("over TCP, the server saw %+v, want no peer uid and no local admin", got)
	}
}

func TestLocalPrincipal(t *testing.T) {
	me := os.Getuid()
	other := 65534
	if me == other {
		other = 65533
	}
	tests := []struct {
		name string
		ctx  context.Context
		ok   bool
	}{
		{"own uid", context.WithValue(context.Background(), peerUIDKey{}, me), true},
		{"root", context.WithValue(context.Background(), peerUIDKey{}, 0), true},
		{"another uid", context.WithValue(context.Background(), peerUIDKey{}, other), me == 0 && other == 0},
		{"no peer", context.Background(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := LocalPrincipal(tt.ctx)
			if ok != tt.ok {
				t.Fatalf("LocalPrincipal = %+v, %v, want ok %v", p, ok, tt.ok)
			}
			uid, _ := PeerUID(tt.ctx)
			want := Principal{}
			if ok {
				want = Principal{Name: fmt.Sprintf("local admin (uid %d)", uid), Role: RoleAdmin, Local: true}
			}
			if p != want {
				t.Errorf("LocalPrincipal = %+v, want %+v", p, want)
			}
		})
	}
}

func TestCheckSocketOwner(t *testing.T) {
	dir := socketDir(t)
	path := filepath.Join(dir, "s.sock")
	listenSocket(t, path)
	if err := CheckSocketOwner(path); err != nil {
		t.Errorf("CheckSocketOwner(own socket) = %v, want nil", err)
	}
	if err := CheckSocketOwner(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckSocketOwner(missing) = %v, want %v", err, fs.ErrNotExist)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckSocketOwner(file); err == nil {
		t.Error("CheckSocketOwner(a regular file) = nil, want an error")
	}
	t.Run("another uid", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown the socket to another uid; TestCheckOwnerUID covers the rule")
		}
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckSocketOwner(path); !errors.Is(err, ErrSocketOwner) {
			t.Errorf("CheckSocketOwner(socket of uid 65534) = %v, want %v", err, ErrSocketOwner)
		}
	})
}

func TestCheckOwnerUID(t *testing.T) {
	tests := []struct {
		owner, me int
		ok        bool
	}{
		{1000, 1000, true},
		{0, 1000, true},
		{0, 0, true},
		{65534, 1000, false},
		{1000, 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("owner %d me %d", tt.owner, tt.me), func(t *testing.T) {
			err := checkOwnerUID("s.sock", tt.owner, tt.me)
			if tt.ok && err != nil {
				t.Errorf("checkOwnerUID = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrSocketOwner) {
				t.Errorf("checkOwnerUID = %v, want %v", err, ErrSocketOwner)
			}
		})
	}
}

package itemio

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// confined makes a bucket folder beside a secret file and folder, with
// symbolic links inside it that point out (to the secret file, the
// secret folder, /etc and /dev/zero) and one that points in; it returns
// the bucket and the folder holding both.
func confined(t testing.TB) (Dir, string) {
	t.Helper()
	top := t.TempDir()
	in := filepath.Join(top, "bucket")
	secret := filepath.Join(top, "secret")
	for _, dir := range []string{filepath.Join(in, "sub"), secret} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(in, "ok.csv"):         "a\n1\n",
		filepath.Join(in, "sub", "b.csv"):   "a\n2\n",
		filepath.Join(top, "secret.txt"):    "SECRET\n",
		filepath.Join(secret, "inside.txt"): "SECRET\n",
	}
	for p, text := range files {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"to-secret.txt": filepath.Join(top, "secret.txt"),
		"rel-secret":    "../secret.txt",
		"to-secret-dir": secret,
		"etc":           "/etc",
		"zero":          "/dev/zero",
		"alias.csv":     "sub/b.csv",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(in, name)); err != nil {
			t.Skipf("symbolic links: %v", err)
		}
	}
	return Dir(in), top
}

// TestDirConfined opens keys that would leave the bucket's folder (by
// "..", an absolute path or a symbolic link) and checks that each is
// refused and nothing outside is read, while keys inside (a link inside
// included) open.
func TestDirConfined(t *testing.T) {
	ctx := context.Background()
	d, _ := confined(t)
	for _, c := range []struct {
		key     string
		want    string // content, "" for a refusal
		wantErr error  // when the refusal has a sentinel
	}{
		{"ok.csv", "a\n1\n", nil},
		{"sub/b.csv", "a\n2\n", nil},
		{"alias.csv", "a\n2\n", nil},
		{"sub/../ok.csv", "", ErrBadKey},
		{"../secret.txt", "", ErrBadKey},
		{"sub/../../secret.txt", "", ErrBadKey},
		{"/etc/passwd", "", ErrBadKey},
		{"", "", ErrBadKey},
		{"a\\..\\x", "", ErrBadKey},
		{"to-secret.txt", "", nil},
		{"rel-secret", "", nil},
		{"to-secret-dir/inside.txt", "", nil},
		{"etc/passwd", "", nil},
		{"etc/shadow", "", nil},
		{"zero", "", nil},
		{"sub", "", ErrNotRegular},
		{"missing", "", fs.ErrNotExist},
	} {
		rc, err := d.Open(ctx, c.key)
		if c.want != "" {
			if err != nil {
				t.Errorf("Open(%q) = %v, want its content", c.key, err)
				continue
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != c.want {
				t.Errorf("Open(%q) read %q, want %q", c.key, b, c.want)
			}
			continue
		}
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, 64))
			rc.Close()
			t.Errorf("Open(%q) read %q, want a refusal", c.key, b)
			continue
		}
		if c.wantErr != nil && !errors.Is(err, c.wantErr) {
			t.Errorf("Open(%q) = %v, want %v", c.key, err, c.wantErr)
		}
		if strings.Contains(err.Error(), string(d)) {
			t.Errorf("Open(%q) = %v, which names the bucket's folder", c.key, err)
		}
	}
}

// TestDirListConfined lists the bucket: only its regular files are
// listed, in key order, no link is followed, and a prefix only enters
// the folders that can hold it.
func TestDirListConfined(t *testing.T) {
	ctx := context.Background()
	d, _ := confined(t)
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"ok.csv", "sub/b.csv"}},
		{"sub/", []string{"sub/b.csv"}},
		{"su", []string{"sub/b.csv"}},
		{"etc", nil},
		{"to-secret", nil},
	} {
		var got []string
		err := d.List(ctx, c.prefix, func(o Object) error {
			got = append(got, o.Key)
			return nil
		})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %q, %v; want %q", c.prefix, got, err, c.want)
		}
	}
}

// TestDirListOrder checks that keys come in key order across folders
// ("a.csv" before "a/b.csv", as '.' < '/') and that fn's error stops the
// listing.
func TestDirListOrder(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	keys := []string{"a/b.csv", "a.csv", "a-b", "b", "a/a/z"}
	for _, k := range keys {
		w, err := d.Create(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	var got []string
	stop := errors.New("stop")
	err := d.List(ctx, "", func(o Object) error {
		got = append(got, o.Key)
		if len(got) == 4 {
			return stop
		}
		return nil
	})
	want := []string{"a-b", "a.csv", "a/a/z", "a/b.csv"}
	if !errors.Is(err, stop) || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v; want %q, stop", got, err, want)
	}
}

// TestDirCreateConfined writes through links and ".." keys: nothing is
// written outside the folder, and no folder is made outside it.
func TestDirCreateConfined(t *testing.T) {
	ctx := context.Background()
	d, top := confined(t)
	for _, key := range []string{"to-secret-dir/new.json", "to-secret-dir/made/manifest.json", "../out.json", filepath.ToSlash(filepath.Join(top, "abs.json")), "sub/../../out.json"} {
		w, err := d.Create(ctx, key)
		if err == nil {
			io.WriteString(w, "{}")
			err = w.Close()
		}
		if err == nil {
			t.Errorf("Create(%q) wrote, want a refusal", key)
		}
	}
	for _, p := range []string{filepath.Join(top, "secret", "new.json"), filepath.Join(top, "secret", "made"), filepath.Join(top, "out.json"), filepath.Join(top, "abs.json")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after the refused writes", p)
		}
	}
	// A key whose file is a link pointing out replaces the link: the
	// file it pointed to keeps its content.
	w, err := d.Create(ctx, "to-secret.txt")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "replaced")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(top, "secret.txt")); string(b) != "SECRET\n" {
		t.Errorf("the secret file holds %q after a write through a link, want it unchanged", b)
	}
}

// TestDirFIFO opens a FIFO of the bucket: it is refused at once, never
// waiting for a writer; listing skips it.
func TestDirFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	ctx := context.Background()
	d := Dir(t.TempDir())
	if err := syscall.Mkfifo(filepath.Join(string(d), "pipe.csv"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		rc, err := d.Open(ctx, "pipe.csv")
		if err == nil {
			rc.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(FIFO) = %v, want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open(FIFO) blocks")
	}
	var n int
	if err := d.List(ctx, "", func(Object) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("List of a folder holding a FIFO = %d objects, %v; want none", n, err)
	}
}

// TestDirPseudoFiles maps a bucket to /proc/self: its files are refused,
// though they look like regular files.
func TestDirPseudoFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	ctx := context.Background()
	for _, c := range []struct{ dir, key string }{{"/proc/self", "environ"}, {"/proc", "self/environ"}, {"/sys/kernel", "hostname"}, {"/dev", "zero"}, {"/dev", "null"}} {
		rc, err := Dir(c.dir).Open(ctx, c.key)
		if err == nil {
			rc.Close()
			t.Errorf("Dir(%s).Open(%q) opened, want ErrNotRegular", c.dir, c.key)
		} else if !errors.Is(err, ErrNotRegular) && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Dir(%s).Open(%q) = %v, want ErrNotRegular", c.dir, c.key, err)
		}
	}
}

// FuzzKey opens and creates any key in a bucket whose folder has a
// secret beside it and links pointing out: a key either is refused or
// reaches a file inside the folder, never the secret; and CheckKey never
// accepts a key with a ".." part or an absolute one.
func FuzzKey(f *testing.F) {
	for _, s := range []string{"ok.csv", "../secret.txt", "/etc/passwd", "to-secret.txt", "sub/../../secret.txt", "etc/passwd", "a//b", "./ok.csv", "sub/./b.csv", "..", ".", "zero", "alias.csv", "to-secret-dir/inside.txt", "x\x00y"} {
		f.Add(s)
	}
	d, top := confined(f)
	f.Fuzz(func(t *testing.T, key string) {
		ctx := context.Background()
		err := CheckKey(key)
		if err == nil && (strings.HasPrefix(key, "/") || slices.Contains(strings.Split(key, "/"), "..")) {
			t.Fatalf("CheckKey(%q) accepts it", key)
		}
		rc, err := d.Open(ctx, key)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, 64))
			rc.Close()
			if strings.Contains(string(b), "SECRET") {
				t.Fatalf("Open(%q) read the secret", key)
			}
		}
		w, err := d.Create(ctx, key)
		if err != nil {
			return
		}
		io.WriteString(w, "fuzz")
		w.Close()
		b, _ := os.ReadFile(filepath.Join(top, "secret.txt"))
		if string(b) != "SECRET\n" {
			t.Fatalf("Create(%q) overwrote the secret", key)
		}
	})
}

// TestDirListCancelled stops a listing whose context is done while it
// reads a large file for its MD5.
func TestDirListCancelled(t *testing.T) {
	d := Dir(t.TempDir())
	p := filepath.Join(string(d), "big")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 3<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	err := d.List(&doneAfter{Context: context.Background(), left: 1}, "", func(Object) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List with a context done while it reads = %v, want context.Canceled", err)
	}
}

// doneAfter is a context that is done once Err has been asked left times.
type doneAfter struct {
	context.Context
	left int
}

func (d *doneAfter) Err() error {
	if d.left > 0 {
		d.left--
		return nil
	}
	return context.Canceled
}

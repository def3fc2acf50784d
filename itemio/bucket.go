package itemio

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Bucket is where a Distributed Map reads its items and writes its
// results: objects by key, as in an S3 bucket. Keys use '/' as separator.
// Implementations must be safe for concurrent use.
type Bucket interface {
	// Open returns the content of the object key; an error wrapping
	// fs.ErrNotExist when there is none.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List calls fn with every object whose key starts with prefix, in
	// key order, until fn returns an error (which List returns).
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Create returns a writer of the object key, replacing any object
	// there once the writer is closed without error.
	Create(ctx context.Context, key string) (io.WriteCloser, error)
}

// Object describes one object of a bucket listing.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
	// ETag is the object's entity tag (for Dir, the hex MD5 of its
	// content, as S3 gives for objects not uploaded in parts), without
	// quotes; empty when unknown.
	ETag string
}

// Dir is a Bucket on a local folder: the key "a/b.csv" is the file
// Dir/a/b.csv. Everything it opens, lists and creates goes through an
// os.Root on the folder, so nothing leaves it: keys with a ".." part or
// starting with '/' are refused (ErrBadKey), and a symbolic link is
// followed only to a file or folder inside the folder. Only regular files
// are objects: devices, FIFOs and sockets are refused without being
// opened for reading (ErrNotRegular), and so are files of the kernel's
// pseudo file systems (/proc, /sys) when the folder is one of theirs.
// Listing never follows a symbolic link. A Dir opens its folder for each
// call, holding nothing between calls.
type Dir string

var _ Bucket = Dir("")

// ErrBadKey reports a key a Dir refuses.
var ErrBadKey = errors.New("invalid object key")

// ErrNotRegular reports an object that is no regular file: a device, a
// FIFO, a socket, a folder, or a file of /proc or /sys.
var ErrNotRegular = errors.New("not a regular file")

// maxKeyLen is the longest key, in bytes (S3's limit).
const maxKeyLen = 1024

// CheckKey reports whether a Dir accepts key: a non-empty relative path
// of at most 1,024 bytes, with '/' as separator, no part "..", no
// backslash and no NUL byte. The error wraps ErrBadKey.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("the key is empty: %w", ErrBadKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("the key is %d bytes long, more than %d: %w", len(key), maxKeyLen, ErrBadKey)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("key %q is absolute: %w", key, ErrBadKey)
	case strings.ContainsAny(key, "\\\x00"):
		return fmt.Errorf("key %q holds a backslash or a NUL byte: %w", key, ErrBadKey)
	}
	for part := range strings.SplitSeq(key, "/") {
		if part == ".." {
			return fmt.Errorf("key %q leaves the folder: %w", key, ErrBadKey)
		}
	}
	return nil
}

// root opens the folder as an os.Root. Its error does not name the
// folder: a definition sees the bucket's name, never where it is.
func (d Dir) root() (*os.Root, error) {
	if d == "" {
		return nil, errors.New("the bucket has no folder")
	}
	r, err := os.OpenRoot(string(d))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("the bucket's folder cannot be opened: %w", err)
	}
	return r, nil
}

// Open opens the file of key, a regular file inside the folder.
func (d Dir) Open(_ context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	r, err := d.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, _, err := openRegular(r, key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// openRegular opens name in r for reading when it is a regular file. It
// looks before it opens, so that a FIFO or a device is never opened; it
// opens without blocking and without taking a terminal, and looks again
// at what it opened, so that a file swapped in between is refused too.
func openRegular(r *os.Root, key string) (*os.File, os.FileInfo, error) {
	name := filepath.FromSlash(key)
	info, err := r.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("key %q is %s: %w", key, modeName(info.Mode()), ErrNotRegular)
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err = f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("key %q is %s: %w", key, modeName(info.Mode()), ErrNotRegular)
	}
	if err == nil && pseudoFile(f) {
		err = fmt.Errorf("key %q is a file of the kernel's /proc or /sys: %w", key, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// modeName names the kind of file of m, for errors.
func modeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// List lists the regular files whose key starts with prefix, in key
// order, with the hex MD5 of each as its ETag. It walks the folder
// without following symbolic links, holding the names of one folder at
// a time, and only enters the folders that can hold such keys.
func (d Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	r, err := d.root()
	if err != nil {
		return err
	}
	defer r.Close()
	return list(ctx, r, "", prefix, fn)
}

// list lists the folder dir of r ("" for the top, else a key prefix
// ending in '/').
func list(ctx context.Context, r *os.Root, dir, prefix string, fn func(Object) error) error {
	name := "."
	if dir != "" {
		name = filepath.FromSlash(strings.TrimSuffix(dir, "/"))
	}
	f, err := r.Open(name)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	// A folder's key is its name and '/', so that sorting the names
	// sorts the keys they hold: "a.csv" < "a/b.csv".
	var keys []string
	for _, e := range entries {
		key := dir + e.Name()
		if CheckKey(key) != nil {
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			key += "/"
			if strings.HasPrefix(key, prefix) || strings.HasPrefix(prefix, key) {
				keys = append(keys, key)
			}
		case t.IsRegular():
			if strings.HasPrefix(key, prefix) {
				keys = append(keys, key)
			}
		}
	}
	entries = nil
	slices.Sort(keys)
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(key, "/") {
			if err := list(ctx, r, key, prefix, fn); err != nil {
				return err
			}
			continue
		}
		o, err := stat(ctx, r, key)
		if err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// stat describes the object key of r, reading it for its MD5 until ctx
// is done.
func stat(ctx context.Context, r *os.Root, key string) (Object, error) {
	f, info, err := openRegular(r, key)
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return Object{}, err
	}
	return Object{Key: key, Size: info.Size(), LastModified: info.ModTime().UTC(), ETag: hex.EncodeToString(h.Sum(nil))}, nil
}

// Create writes the file of key (creating its folders inside the folder)
// through a temporary file renamed into place on Close, so that a crash
// leaves the previous content or the new, never half of it.
func (d Dir) Create(_ context.Context, key string) (io.WriteCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	r, err := d.root()
	if err != nil {
		return nil, err
	}
	name := filepath.FromSlash(key)
	if dir := filepath.Dir(name); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			r.Close()
			return nil, err
		}
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+"."+rand.Text()[:12])
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &atomicFile{r: r, f: f, tmp: tmp, name: name}, nil
}

// atomicFile is a file being written in a Dir: tmp until Close renames it
// name. It holds the Dir's root until then.
type atomicFile struct {
	r         *os.Root
	f         *os.File
	tmp, name string
}

func (a *atomicFile) Write(b []byte) (int, error) { return a.f.Write(b) }

func (a *atomicFile) Close() error {
	defer a.r.Close()
	err := a.f.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = a.r.Rename(a.tmp, a.name)
	}
	if err != nil {
		a.r.Remove(a.tmp)
	}
	return err
}

// Abort discards the file: the object keeps its previous content.
func (a *atomicFile) Abort() {
	a.f.Close()
	a.r.Remove(a.tmp)
	a.r.Close()
}

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

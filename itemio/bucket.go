package itemio

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// Dir/a/b.csv. Keys that would leave the folder ("..", absolute paths)
// are refused.
type Dir string

var _ Bucket = Dir("")

// ErrBadKey reports a key a Dir refuses.
var ErrBadKey = errors.New("invalid object key")

func (d Dir) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") || strings.ContainsRune(key, 0) {
		return "", fmt.Errorf("key %q: %w", key, ErrBadKey)
	}
	for _, part := range strings.Split(key, "/") {
		if part == ".." {
			return "", fmt.Errorf("key %q leaves the folder: %w", key, ErrBadKey)
		}
	}
	return filepath.Join(string(d), filepath.FromSlash(key)), nil
}

// Open opens the file of key.
func (d Dir) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// List walks the folder and lists the regular files whose key starts
// with prefix, in key order, with the hex MD5 of each as its ETag.
func (d Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	var keys []string
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(string(d), p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(keys)
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		o, err := d.stat(key)
		if err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (d Dir) stat(key string) (Object, error) {
	p, err := d.path(key)
	if err != nil {
		return Object{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Object{}, err
	}
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return Object{}, err
	}
	return Object{Key: key, Size: info.Size(), LastModified: info.ModTime().UTC(), ETag: hex.EncodeToString(h.Sum(nil))}, nil
}

// Create writes the file of key (creating its folders) through a
// temporary file renamed into place on Close, so that a crash leaves the
// previous content or the new, never half of it.
func (d Dir) Create(_ context.Context, key string) (io.WriteCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return nil, err
	}
	return &atomicFile{f: f, path: p}, nil
}

type atomicFile struct {
	f    *os.File
	path string
}

func (a *atomicFile) Write(b []byte) (int, error) { return a.f.Write(b) }

func (a *atomicFile) Close() error {
	err := a.f.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
	}
	return err
}

// Abort discards the file: the object keeps its previous content.
func (a *atomicFile) Abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

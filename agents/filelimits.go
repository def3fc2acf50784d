package agents

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// FileLimitError is a path or size a FileLimits refuses: a path that is
// not relative to the tool's root, that breaks one of the FileSystem
// rules, or a file too large for MaxFileSize.
type FileLimitError struct {
	// Path is the path as the caller gave it (empty for CheckSize).
	Path string
	// Rule is what refused it: "Path" (empty, absolute, escaping the
	// root or holding a NUL byte), "AllowedPaths", "DeniedPaths",
	// "AllowedExtensions" or "MaxFileSize".
	Rule string
	// Glob is the DeniedPaths glob the path (or one of its folders)
	// matches, or the malformed glob of AllowedPaths or DeniedPaths
	// that refused it.
	Glob string
	// Reason says what is wrong with the path when Rule is "Path", or
	// with Glob when the glob is malformed; empty otherwise.
	Reason string
	// Size and Max are the refused size and the bound, in bytes, when
	// Rule is "MaxFileSize".
	Size, Max int64
}

// Error says what was refused and by which rule, like `path
// "secrets/k.pem" matches the FileSystem.DeniedPaths glob "secrets/**"`.
func (e *FileLimitError) Error() string {
	switch {
	case e.Rule == "Path":
		return fmt.Sprintf("path %q %s", e.Path, e.Reason)
	case e.Rule == "MaxFileSize" && e.Path != "":
		return fmt.Sprintf("file %q: size %d bytes exceeds the FileSystem.MaxFileSize of %d bytes", e.Path, e.Size, e.Max)
	case e.Rule == "MaxFileSize":
		return fmt.Sprintf("size %d bytes exceeds the FileSystem.MaxFileSize of %d bytes", e.Size, e.Max)
	case e.Reason != "":
		return fmt.Sprintf("path %q: the FileSystem.%s glob %q %s", e.Path, e.Rule, e.Glob, e.Reason)
	case e.Rule == "DeniedPaths":
		return fmt.Sprintf("path %q matches the FileSystem.DeniedPaths glob %q", e.Path, e.Glob)
	case e.Rule == "AllowedPaths":
		return fmt.Sprintf("path %q matches no FileSystem.AllowedPaths glob", e.Path)
	case e.Rule == "AllowedExtensions":
		ext := fileExt(e.Path)
		if ext == "" {
			return fmt.Sprintf("path %q has no extension, and FileSystem.AllowedExtensions requires one", e.Path)
		}
		return fmt.Sprintf("path %q: extension %q is not one of the FileSystem.AllowedExtensions", e.Path, ext)
	}
	return fmt.Sprintf("path %q is refused by FileSystem.%s", e.Path, e.Rule)
}

// Check reports whether the FileSystem limits let a tool reach rel, a
// slash-separated path relative to the tool's root ("." is the root
// itself); dir says whether rel is a folder to be listed rather than a
// file. Check cleans rel itself (path.Clean) and always refuses an empty
// or absolute path, one that escapes the root ("..", after cleaning)
// and one holding a NUL byte; a nil f checks only that. Otherwise:
//
//   - AllowedPaths, when not empty: the cleaned path must match one of
//     its globs. A folder (dir true) is also allowed when it is a prefix
//     of what a glob matches, so that the folders leading to allowed
//     files can be listed: "notes/**" lets "." and "notes" be listed, and
//     "notes/*/a.md" lets "notes/x" be.
//   - DeniedPaths: neither the path nor any folder on the way to it may
//     match one of its globs, so that denying "secrets" also denies
//     "secrets/k.pem". They win over AllowedPaths.
//   - AllowedExtensions, when not empty and dir is false: the extension
//     of the last segment (path.Ext, so "a.tar.gz" has ".gz" and ".env"
//     has ".env"), compared case-insensitively, must be in the list.
//
// A glob matches segment by segment as path.Match does, and a whole
// segment "**" matches zero or more segments: "notes/**" matches "notes",
// "notes/a.md" and "notes/x/y.md"; "**/*.md" matches "a.md" and
// "x/y/a.md". A glob is cleaned as a path first, a leading "/" standing
// for the root. Matching is case-sensitive. A malformed glob refuses
// every path it is checked against. A refusal is a *FileLimitError.
//
// Check is safe for concurrent use as long as f is not modified.
func (f *FileLimits) Check(rel string, dir bool) error {
	refuse := func(reason string) error {
		return &FileLimitError{Path: rel, Rule: "Path", Reason: reason}
	}
	switch {
	case rel == "":
		return refuse(`is empty: name a path relative to the tool's root ("." for the root itself)`)
	case strings.IndexByte(rel, 0) >= 0:
		return refuse("holds a NUL byte")
	case strings.HasPrefix(rel, "/") || filepath.IsAbs(rel):
		return refuse("is absolute: paths are relative to the tool's root")
	}
	clean := path.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return refuse("escapes the tool's root")
	}
	// The belt to the braces above: what filepath considers local on this
	// system (Windows drive letters and reserved names included).
	if clean != "." && !filepath.IsLocal(filepath.FromSlash(clean)) {
		return refuse("is not a local path under the tool's root")
	}
	if f == nil {
		return nil
	}
	var segs []string
	if clean != "." {
		segs = strings.Split(clean, "/")
	}
	for _, g := range f.DeniedPaths {
		gsegs := globSegments(g)
		// The path itself and every folder on the way to it; the root
		// only when it is the path (a glob that matches the root, like
		// "**", then denies listing it).
		for n := len(segs); n >= 1; n-- {
			full, _, err := matchGlob(gsegs, segs[:n])
			if err != nil {
				return &FileLimitError{Path: rel, Rule: "DeniedPaths", Glob: g, Reason: "is malformed"}
			}
			if full {
				return &FileLimitError{Path: rel, Rule: "DeniedPaths", Glob: g}
			}
		}
		if len(segs) == 0 {
			full, _, err := matchGlob(gsegs, nil)
			if err != nil {
				return &FileLimitError{Path: rel, Rule: "DeniedPaths", Glob: g, Reason: "is malformed"}
			}
			if full {
				return &FileLimitError{Path: rel, Rule: "DeniedPaths", Glob: g}
			}
		}
	}
	if len(f.AllowedPaths) > 0 {
		allowed := false
		for _, g := range f.AllowedPaths {
			full, prefix, err := matchGlob(globSegments(g), segs)
			if err != nil {
				return &FileLimitError{Path: rel, Rule: "AllowedPaths", Glob: g, Reason: "is malformed"}
			}
			if full || dir && prefix {
				allowed = true
				break
			}
		}
		if !allowed {
			return &FileLimitError{Path: rel, Rule: "AllowedPaths"}
		}
	}
	if !dir && len(f.AllowedExtensions) > 0 {
		ext := fileExt(clean)
		ok := false
		for _, a := range f.AllowedExtensions {
			if ext != "" && strings.EqualFold(ext, a) {
				ok = true
				break
			}
		}
		if !ok {
			return &FileLimitError{Path: rel, Rule: "AllowedExtensions"}
		}
	}
	return nil
}

// CheckSize reports whether a file of n bytes may be read or written
// under MaxFileSize (a *FileLimitError with Rule "MaxFileSize"). A nil f,
// or a MaxFileSize of 0, allows any size.
func (f *FileLimits) CheckSize(n int64) error {
	if f == nil || f.MaxFileSize <= 0 || n <= f.MaxFileSize {
		return nil
	}
	return &FileLimitError{Rule: "MaxFileSize", Size: n, Max: f.MaxFileSize}
}

// fileExt is the extension of p's last segment, as path.Ext gives it.
func fileExt(p string) string {
	return path.Ext(path.Clean(p))
}

// globSegments cleans a glob as a path (a leading "/" being the root)
// and splits it into its segments; the root has none.
func globSegments(g string) []string {
	g = strings.TrimPrefix(path.Clean("/"+g), "/")
	if g == "" {
		return nil
	}
	return strings.Split(g, "/")
}

// matchGlob matches the segments of a path against those of a glob. full
// reports a match of the whole path; prefix reports that the path is a
// prefix of what the glob matches (some leading part of the glob matches
// the whole path). It runs in time proportional to len(glob)*len(segs),
// whatever the number of "**" segments. err is path.ErrBadPattern when a
// segment of the glob is malformed.
func matchGlob(glob, segs []string) (full, prefix bool, err error) {
	for _, g := range glob {
		if g == "**" {
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			return false, false, err
		}
	}
	// m[j] is whether glob[:i] matches segs[:j], for the current i.
	m := make([]bool, len(segs)+1)
	m[0] = true
	prefix = m[len(segs)]
	next := make([]bool, len(segs)+1)
	for _, g := range glob {
		if g == "**" {
			// Zero segments (m[j]) or one more (next[j-1]).
			next[0] = m[0]
			for j := 1; j <= len(segs); j++ {
				next[j] = m[j] || next[j-1]
			}
		} else {
			next[0] = false
			for j := 1; j <= len(segs); j++ {
				ok, _ := path.Match(g, segs[j-1]) // validated above
				next[j] = m[j-1] && ok
			}
		}
		m, next = next, m
		prefix = prefix || m[len(segs)]
	}
	return m[len(segs)], prefix, nil
}

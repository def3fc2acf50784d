package states

import (
	"fmt"
	"strings"
)

// FileBucketScheme starts a Bucket that names a local folder,
// "file://DIR", instead of a bucket by name. Only a local run may use
// one (see FileBuckets).
const FileBucketScheme = "file://"

// FileBuckets reports every Distributed Map of m, nested machines
// included, whose ItemReader or ResultWriter writes a local folder
// ("file://DIR") as its Bucket: one problem each, at the Bucket's JSON
// Pointer. A server refuses such a definition, as it names a path of the
// server's own machine: a definition names buckets, which only the
// server's owner maps to folders. A Bucket computed at run time is
// checked when it is used. The list is empty (its Err nil) when there is
// none.
func (m *Machine) FileBuckets() ErrorList {
	var list ErrorList
	m.Each(func(_, name string, st State) bool {
		s, ok := st.(*Map)
		if !ok {
			return true
		}
		if r := s.ItemReader; r != nil && strings.HasPrefix(r.Bucket, FileBucketScheme) {
			list = append(list, fileBucket(name, "ItemReader", r.Bucket, r.BucketPointer))
		}
		if w := s.ResultWriter; w != nil && strings.HasPrefix(w.Bucket, FileBucketScheme) {
			list = append(list, fileBucket(name, "ResultWriter", w.Bucket, w.BucketPointer))
		}
		return true
	})
	return list
}

func fileBucket(state, field, bucket, ptr string) *ValidationError {
	return &ValidationError{Pointer: ptr, State: state, Msg: fmt.Sprintf(
		"the %s's Bucket %q names a local folder: a definition names a bucket, which the server's owner maps to a folder (the agents file's Buckets); file:// is only for a local run (aslrun run --allow-file-buckets)", field, bucket)}
}

//go:build !unix

package files

// openFlags are added when a file or folder is opened to be read.
const openFlags = 0

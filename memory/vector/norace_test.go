//go:build !race

package vector

// recallN is the size of the recall test's index.
const recallN = 10000

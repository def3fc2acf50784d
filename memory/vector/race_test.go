//go:build race

package vector

// recallN is the size of the recall test's index. The race detector slows
// the graph build about tenfold, so under it the test uses fewer vectors.
const recallN = 500

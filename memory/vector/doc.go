// Package vector is the in-process nearest-neighbour search behind semantic
// memory: texts are stored with embeddings (float32 vectors) and a read asks
// for the k entries most similar to a query vector by cosine similarity,
// above a minimum score.
//
// Three layers, each usable alone:
//
//   - [Exact] scans every vector (the reference answer). Vectors live in
//     blocks of 1,024 back to back in one []float32 each, normalised to
//     length 1 on insert, so cosine similarity is a dot product; a bounded heap keeps the best k. Ties in
//     score are broken by id, so results are deterministic.
//   - [HNSW] is an approximate index (a hierarchical navigable small-world
//     graph, Malkov and Yashunin 2016). It is deterministic given its seed and
//     insertion order, deletes by tombstone and rebuilds itself once a
//     configured fraction of its nodes are tombstones.
//   - [Index] is what the stores use: entries by string id, exact search
//     below a size threshold, the HNSW above it, and exact search again when
//     a filter rejects most of what the graph walk sees. It is safe for
//     concurrent use.
//
// [Encode] and [Decode] turn a vector into bytes (little-endian float32) and
// back, for stores that persist vectors as a blob or bytea.
//
// Vectors with a zero length or a NaN or infinite component are refused, and
// every vector of one index has the same dimension.
package vector

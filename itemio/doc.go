// Package itemio reads the items of a Distributed Map (its ItemReader) and
// writes its results (its ResultWriter), with local stand-ins for Amazon
// S3.
//
// A Bucket is where objects are read, listed and written, by key: Dir is a
// local folder, confined with os.Root (no key, "..", absolute path or
// symbolic link leaves it, and only regular files are objects); anything
// else (a real S3 client, an object store) is a Go type implementing
// Bucket, registered on the agents registry under the bucket's name.
//
// Items are read one at a time (Items.Next): a reader holds one item, plus
// its decoder's buffer, never the whole object, and an item longer than
// Format.MaxItemBytes (DefaultMaxItemBytes, 1 MiB) fails the read with
// ErrItemTooLarge. The formats are AWS's: JSON (an array, or an object
// holding one), JSONL (one value a line) and CSV (each row an object of
// strings, the header from the first row or given), and a bucket listing
// as S3's ListObjectsV2 items, of at most DefaultMaxListed objects unless
// told otherwise.
package itemio

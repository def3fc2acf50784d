package engine

import "testing"

// BenchmarkStreamChunk is the engine's cost of one streamed chunk: the
// chunker (token mode) and the feed's append, with no reader.
func BenchmarkStreamChunk(b *testing.B) {
	x := New(Config{})
	s := x.startStream("bench", "Draft", "Draft#1", 1, streamShape{})
	b.ReportAllocs()
	for b.Loop() {
		s.write(1, "a few tokens ")
	}
	s.end("")
}

// BenchmarkStreamChunkSentence is the same in sentence mode, the text
// cut at each sentence's end.
func BenchmarkStreamChunkSentence(b *testing.B) {
	x := New(Config{})
	s := x.startStream("bench", "Draft", "Draft#1", 1, streamShape{mode: "sentence"})
	b.ReportAllocs()
	for b.Loop() {
		s.write(1, "Tokens. ")
	}
	s.end("")
}

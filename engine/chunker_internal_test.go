package engine

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"
)

// cutAll feeds writes to a chunker of shape and returns the chunks it
// emitted, "|"-joined, with the turn of each when it is not 0.
func cutAll(shape streamShape, writes ...string) []string {
	var out []string
	c := newChunker(shape, func(turn int, text string) {
		if turn != 0 {
			text = string(rune('0'+turn)) + ":" + text
		}
		out = append(out, text)
	})
	turn := 0
	for _, w := range writes {
		if rest, ok := strings.CutPrefix(w, "\x00"); ok {
			// "\x00" before the text: the next turn.
			turn++
			w = rest
		}
		c.write(turn, w)
	}
	c.close()
	return out
}

func TestChunker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shape  streamShape
		writes []string
		want   string
	}{
		{"token: each write", streamShape{}, []string{"Hel", "lo ", "world"}, "Hel|lo |world"},
		{"token: a new turn", streamShape{}, []string{"a", "\x00b"}, "a|1:b"},
		{"token: buffered to a size", streamShape{mode: "token", bufSize: 4}, []string{"ab", "cd", "e", "fgh", "i"}, "abcd|efgh|i"},
		{"token: flushed at newlines", streamShape{mode: "token", flushOnNewline: true}, []string{"ab", "c\nd", "e\n\nf"}, "abc\n|de\n\n|f"},
		{"line", streamShape{mode: "line"}, []string{"one\ntw", "o\nthree"}, "one\n|two\n|three"},
		{"line held to Buffer.Size", streamShape{mode: "line", bufSize: 5}, []string{"abcdefg\nh"}, "abcdefg\n|h"},
		{"sentence", streamShape{mode: "sentence"}, []string{"Hi there. How", " are you? Fine!", " Ok... yes"}, "Hi there. |How are you? |Fine! |Ok... |yes"},
		{"sentence: a dot in a number is no end", streamShape{mode: "sentence"}, []string{"Pi is 3.14 today. Yes"}, "Pi is 3.14 today. |Yes"},
		{"sentence: a newline ends one", streamShape{mode: "sentence"}, []string{"a list\nnext"}, "a list\n|next"},
		{"chunk", streamShape{mode: "chunk", size: 3}, []string{"abcd", "efghij", "k"}, "abc|def|ghi|jk"},
		{"chunk counts characters", streamShape{mode: "chunk", size: 2}, []string{"éàü", "ß"}, "éà|üß"},
		{"a character cut between writes", streamShape{}, []string{"caf\xc3", "\xa9 ok"}, "caf|é ok"},
		{"a four-byte character cut thrice", streamShape{}, []string{"\xf0", "\x9f", "\x98", "\x80!"}, "😀!"},
		{"a cut character at the end", streamShape{}, []string{"x\xc3"}, "x|\uFFFD"},
		{"a new turn flushes the held text", streamShape{mode: "line"}, []string{"half", "\x00next\n"}, "half|1:next\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(cutAll(tc.shape, tc.writes...), "|"); got != tc.want {
				t.Errorf("chunks %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChunkerFlushInterval: text held by a line chunker goes out when
// Buffer.FlushInterval passes, not before; a flush by a complete line
// stops the timer.
func TestChunkerFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // the interval's flush runs on a goroutine of its own
		var out []string
		chunks := func() string {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(out, "|")
		}
		c := newChunker(streamShape{mode: "line", flushEvery: 100 * time.Millisecond}, func(_ int, text string) {
			mu.Lock()
			out = append(out, text)
			mu.Unlock()
		})
		c.write(0, "partial")
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		if got := chunks(); got != "" {
			t.Fatalf("flushed %q before the interval", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := chunks(); got != "partial" {
			t.Fatalf("after the interval: %q", got)
		}
		c.write(0, "a\n")
		time.Sleep(time.Second)
		synctest.Wait()
		c.close()
		if got := chunks(); got != "partial|a\n" {
			t.Fatalf("chunks %q", got)
		}
	})
}

// FuzzChunker: whatever the writes and the shape, the chunks joined are
// the writes joined (invalid UTF-8 aside), every chunk is valid UTF-8 and
// none is empty.
func FuzzChunker(f *testing.F) {
	f.Add("token", 0, 0, false, "Hello world. Bye!\nx", 3)
	f.Add("chunk", 2, 0, true, "héllo\nwörld", 1)
	f.Add("sentence", 0, 5, false, "a. b? c! d", 2)
	f.Fuzz(func(t *testing.T, mode string, size, buf int, nl bool, text string, step int) {
		if !strings.Contains("token line sentence chunk", mode) || mode == "" || strings.Contains(mode, " ") {
			return
		}
		if size < 1 || size > 64 {
			size = 3
		}
		if buf < 0 || buf > 64 {
			buf = 0
		}
		if step < 1 || step > 16 {
			step = 1
		}
		shape := streamShape{mode: mode, size: size, bufSize: buf, flushOnNewline: nl}
		var writes []string
		for i := 0; i < len(text); i += step {
			writes = append(writes, text[i:min(i+step, len(text))])
		}
		var got []string
		c := newChunker(shape, func(_ int, text string) { got = append(got, text) })
		for _, w := range writes {
			c.write(0, w)
		}
		c.close()
		for _, c := range got {
			if c == "" || !utf8.ValidString(c) {
				t.Fatalf("chunk %q is empty or not UTF-8", c)
			}
		}
		if want := strings.ToValidUTF8(text, "\uFFFD"); utf8.ValidString(text) && strings.Join(got, "") != want {
			t.Fatalf("chunks %q join to %q, want %q", got, strings.Join(got, ""), want)
		}
	})
}

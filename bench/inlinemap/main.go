// Command inlinemap measures an inline Map over a large execution input:
// -items objects {"id", "title"} (a 46-byte title), each run by a Task
// whose agent answers at once, the results thrown away (ResultPath null).
// The input is decoded as `aslrun run` decodes an input file
// (jsonvalue.DecodePacked: large arrays held as their JSON text), or, with
// -packed=false, into Go maps and slices. It prints one JSON line: the
// input's JSON size, the heap it decodes to (after a collection) and its
// ratio to the JSON, the Map's time, the peak heap sampled while it ran,
// and the process's peak RSS.
//
//	go run ./bench/inlinemap -items 1000000 -store bolt -dir /tmp/im
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "inlinemap:", err)
		os.Exit(1)
	}
}

const definition = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":%d,"ResultPath":null,
	"ItemProcessor":{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Work","End":true}}},"End":true}}}`

type result struct {
	Items        int     `json:"items"`
	Packed       bool    `json:"packed"`
	Store        string  `json:"store"`
	JSONBytes    int     `json:"jsonBytes"`
	DecodedHeap  uint64  `json:"decodedHeapBytes"`
	HeapPerJSON  float64 `json:"decodedHeapPerJSONByte"`
	Seconds      float64 `json:"seconds"`
	ItemsPerSec  float64 `json:"itemsPerSecond"`
	PeakHeap     uint64  `json:"peakHeapBytes"`
	PeakHeapJSON float64 `json:"peakHeapPerJSONByte"`
	PeakRSS      int64   `json:"peakRSSBytes"`
	Status       string  `json:"status"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inlinemap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	items := fs.Int("items", 1000000, "items of the Map's input")
	packed := fs.Bool("packed", true, "decode the input as aslrun run does (large arrays packed)")
	storeName := fs.String("store", "bolt", "store: bolt (batched durability) or none")
	concurrency := fs.Int("concurrency", 40, "MaxConcurrency")
	dir := fs.String("dir", "", "folder for the bbolt database (-store bolt)")
	heapProfile := fs.String("heapprofile", "", "write a heap profile to this file when the heap sampled is at its peak")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *items <= 0 || *concurrency <= 0 {
		return errors.New("-items and -concurrency must be positive")
	}
	m, err := states.Parse([]byte(fmt.Sprintf(definition, *concurrency)))
	if err != nil {
		return err
	}
	reg := agents.NewRegistry()
	reg.Register("Work", agents.DirectFunc(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"ok": true}, nil
	}))
	cfg := engine.Config{Agents: reg, MaxPayloadSize: -1}
	switch *storeName {
	case "none":
	case "bolt":
		if *dir == "" {
			return errors.New("-store bolt needs -dir")
		}
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(*dir, "inlinemap.db")
		os.Remove(path)
		b, err := store.OpenBolt(path, store.BoltOptions{})
		if err != nil {
			return err
		}
		defer b.Close()
		defer os.Remove(path)
		cfg.Store, cfg.Durability = b, engine.DurabilityBatched
	default:
		return fmt.Errorf("-store %q: want bolt or none", *storeName)
	}
	text := inputText(*items)
	var input any
	if *packed {
		input, err = jsonvalue.DecodePacked(text, jsonvalue.PackFrom)
	} else {
		input, err = jsonvalue.Decode(text)
	}
	if err != nil {
		return err
	}
	r := result{Items: *items, Packed: *packed, Store: *storeName, JSONBytes: len(text)}
	text = nil
	r.DecodedHeap = heap()
	r.HeapPerJSON = float64(r.DecodedHeap) / float64(r.JSONBytes)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
					if *heapProfile != "" {
						runtime.GC()
						writeHeapProfile(*heapProfile)
					}
				}
			}
		}
	}()
	x := engine.New(cfg)
	start := time.Now()
	res, err := x.Run(ctx, m, input, engine.StartOptions{})
	close(done)
	if err != nil {
		return err
	}
	took := time.Since(start)
	r.Seconds, r.ItemsPerSec, r.Status = took.Seconds(), float64(*items)/took.Seconds(), string(res.Status)
	r.PeakHeap = peak.Load()
	r.PeakHeapJSON = float64(r.PeakHeap) / float64(r.JSONBytes)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.PeakRSS = ru.Maxrss * 1024
	}
	if res.Status != engine.StatusSucceeded {
		return fmt.Errorf("execution %s: %s: %s: %s", res.ID, res.Status, res.Error, res.Cause)
	}
	runtime.KeepAlive(input)
	return json.NewEncoder(stdout).Encode(r)
}

// inputText is {"items":[{"id":0,"title":"…"},…]} with n items.
func inputText(n int) []byte {
	title := strings.Repeat("t", 46)
	b := make([]byte, 0, n*72+16)
	b = append(b, `{"items":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"id":%d,"title":"%s"}`, i, title)
	}
	return append(b, "]}"...)
}

// writeHeapProfile writes the heap profile to path, replacing it.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	pprof.WriteHeapProfile(f)
	f.Close()
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

//go:build pebble

package main

import (
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/pebble"
)

func init() {
	apiModes = append(apiModes, rPebble)
	openPebble = func(dir string) (store.Store, error) { return pebble.Open(dir, pebble.Options{}) }
}

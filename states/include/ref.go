package include

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// registryScheme starts a registry import.
const registryScheme = "registry://"

// schemeRE matches a URL's scheme, like "https://".
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// An importRef is one parsed Imports value: a file path, or a registry
// name and constraint.
type importRef struct {
	path       string // file imports
	name       string // registry imports
	constraint string
}

func (r importRef) registry() bool { return r.name != "" }

// parseImport parses an Imports value: a file path, or
// registry://name@constraint. URLs are refused.
func parseImport(s string) (importRef, error) {
	if s == "" {
		return importRef{}, fmt.Errorf("an import is a file path or registry://name@constraint, not empty text")
	}
	if rest, ok := strings.CutPrefix(s, registryScheme); ok {
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			return importRef{}, fmt.Errorf("registry import %q has no version constraint: write registry://name@constraint (1.2.0, ^1.0.0, ~1.2.0, >=1.0.0 or latest)", s)
		}
		r := importRef{name: rest[:at], constraint: rest[at+1:]}
		if r.name == "" || strings.ContainsAny(r.name, " \t\r\n@") {
			return importRef{}, fmt.Errorf("registry import %q: %q is not a workflow name", s, r.name)
		}
		if err := CheckConstraint(r.constraint); err != nil {
			return importRef{}, fmt.Errorf("registry import %q: %w", s, err)
		}
		return r, nil
	}
	if schemeRE.MatchString(s) {
		return importRef{}, fmt.Errorf("import %q is a URL: URL imports are not supported (import a file, or a registered workflow as registry://name@constraint)", s)
	}
	return importRef{path: s}, nil
}

// CheckConstraint reports whether c is a version constraint a registry
// import may carry: "latest", a semver label (1.2.0) or a semver
// constraint (^1.0.0, ~1.2.0, >=1.0.0, …).
func CheckConstraint(c string) error {
	if c == "latest" {
		return nil
	}
	if c == "" {
		return fmt.Errorf("empty version constraint: want 1.2.0, ^1.0.0, ~1.2.0, >=1.0.0 or latest")
	}
	if _, err := semver.NewConstraint(c); err != nil {
		return fmt.Errorf("version constraint %q does not parse (want 1.2.0, ^1.0.0, ~1.2.0, >=1.0.0 or latest): %v", c, err)
	}
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/store/postgres"
)

// cmdMigrate applies the schema migrations a PostgreSQL database lacks.
func cmdMigrate(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	db := fs.String("db", "", "the PostgreSQL database `URL`: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…] (required)")
	pos, err := parseFlags(fs, "migrate", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usageErrorf("migrate: unexpected argument %q", pos[0])
	case *db == "":
		return usageErrorf("migrate: --db postgres://… is required (see \"aslrun migrate --help\")")
	case !postgres.IsURL(*db):
		return usageErrorf("migrate: --db %s: migrate takes a PostgreSQL database (postgres://…); a bbolt database migrates itself when it is opened", postgres.Redact(*db))
	}
	res, err := postgres.Migrate(ctx, *db, postgres.Options{})
	if err != nil {
		if err := interrupted(ctx, ""); err != nil {
			return err
		}
		return fmt.Errorf("migrate: %w", err)
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(c.stdout, "%s is up to date: schema version %d\n", postgres.Redact(*db), res.Version)
		return nil
	}
	applied := make([]string, len(res.Applied))
	for i, v := range res.Applied {
		applied[i] = fmt.Sprint(v)
	}
	fmt.Fprintf(c.stdout, "%s migrated to schema version %d (applied %s)\n", postgres.Redact(*db), res.Version, strings.Join(applied, ", "))
	return nil
}

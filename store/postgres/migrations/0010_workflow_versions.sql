-- Versions people can pin: a registered version's optional semver label
-- (unique per workflow; '' for none) and lock (its imports' resolved
-- versions, alias → "name@N", JSON text; NULL for none), kept beside the
-- definition so its hash does not change; and aliases, a name per
-- workflow that points to one of its versions and can be moved.
ALTER TABLE workflows ADD COLUMN label text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE workflows ADD COLUMN lock bytea;
CREATE UNIQUE INDEX workflows_label ON workflows (name, label) WHERE label <> '';

CREATE TABLE workflow_aliases (
    name       text COLLATE "C" NOT NULL,
    alias      text COLLATE "C" NOT NULL,
    version    integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, alias),
    FOREIGN KEY (name, version) REFERENCES workflows (name, version)
);

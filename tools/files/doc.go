// Package files is the built-in file tool: a model reads, lists,
// inspects and (when granted) writes text files under one folder that
// the server's owner chose.
//
// # What it can reach
//
// A Tool reaches the files and folders under Config.Root and nothing
// else. Every path it is given is slash-separated and relative to Root
// ("." is Root itself); an empty or absolute path, one holding a NUL
// byte, and one that leaves Root through ".." (after cleaning) are
// refused before anything is opened. Every open, stat, folder creation
// and rename then goes through an os.Root opened on Root, so a symbolic
// link (absolute, or relative and climbing out) cannot lead outside it:
// such a path is refused as States.Permissions, and in a listing an
// entry that is such a link is left out. What os.Root does not stop
// stays possible, and is the owner's to avoid when choosing Root: a hard
// link to a file elsewhere, a bind mount, a device node made under Root.
//
// Within Root, what a call may reach narrows in two steps, neither of
// which can widen the other:
//
//   - The owner's Config: the operations granted (read, list and stat by
//     default; write only when named) and MaxFileSize (10 MiB by
//     default).
//   - The calling state's Tools block FileSystem, which the engine puts
//     in the call's context (agents.ToolLimitsFrom): AllowedPaths,
//     DeniedPaths, AllowedExtensions and MaxFileSize, applied by
//     agents.FileLimits.Check and CheckSize. The effective size bound is
//     the smaller of the owner's and the state's.
//
// # Operations
//
// The input is a JSON object {"operation", "path", "content"}:
//
//   - read: {"path", "content", "size"}, the text of a regular file. A
//     file larger than the size bound is refused from its size before it
//     is read, and the read is bounded anyway in case the file grows. A
//     file that is not UTF-8 is refused (Agent.ToolError): the tool
//     reads text only, and returns no base64.
//   - write: {"path", "size"}. Creates or replaces a regular file with
//     "content" (UTF-8 text), creating the folders on its way. The file
//     is written to a temporary file beside it (".aslrun-….tmp"), synced
//     and renamed over the path, so a reader sees the old or the new
//     text, never a part; a replaced file keeps its permission bits, a
//     new one gets 0644 (less the umask), and a symbolic link at the
//     path is replaced rather than followed.
//   - list: {"path", "entries": [{"name", "type", "size"}]} for a folder,
//     sorted by name; "type" is "file" or "dir", and "size" is given for
//     files only. Entries the state's FileSystem would refuse, symbolic
//     links that lead outside Root or nowhere, and what is neither a
//     regular file nor a folder (pipes, sockets, devices) are left out.
//     At most MaxEntries entries are returned; when more remain,
//     "truncated" is true.
//   - stat: {"path", "type", "size", "modified"}, "type" being "file",
//     "dir" or "other", and "modified" an RFC 3339 time in UTC.
//
// A folder to list or stat is allowed by AllowedPaths when it matches
// one of its globs or leads to what one matches (agents.FileLimits.Check
// with dir true), so that "notes/**" lets the model list "." and find
// "notes".
//
// # Errors
//
// A refused path, operation or size is an *asl.Error named
// States.Permissions naming the path, the rule and the state (its Err
// is the *agents.FileLimitError when FileSystem refused it). Invalid
// input, a missing file, a file where a folder is expected and the
// like are Agent.ToolError naming the field or the path. A cancelled
// context returns its error.
package files

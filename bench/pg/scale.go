package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// scaleConfig is what -mode scale measures.
type scaleConfig struct {
	aslrun     string        // the aslrun binary
	db         string        // the PostgreSQL URL every server shares
	tmp        string        // where the tokens file and logs go
	servers    []int         // server counts to measure, e.g. 1 2 4
	delays     []float64     // agent delays in seconds, e.g. 0.02 and 0
	perServer  int           // executions submitted per server
	cap        int           // each server's --max-concurrent
	submit     string        // "spread": starts go round robin to the servers; "one": all to the first
	timeout    time.Duration // the longest one measurement may take
	stderr     io.Writer     // where the servers' logs go when they fail
	poll       time.Duration // each server's --poll
	tasksInRun int           // Task states in one execution
	durability string        // each server's --durability
	repeat     int           // runs of each row; the median is reported
}

// scaleRun is one row of the scale table.
type scaleRun struct {
	Servers    int     `json:"servers"`
	DelayMs    float64 `json:"agentDelayMillis"`
	Submit     string  `json:"submit"`
	Durability string  `json:"durability"`
	Executions int     `json:"executions"`
	Seconds    float64 `json:"seconds"`
	// SubmitSeconds is how long the starts took to be accepted.
	SubmitSeconds float64 `json:"submitSeconds"`
	PerSecond     float64 `json:"executionsPerSecond"`
	// TaskTransitions is Task states completed per second.
	TaskTransitions float64 `json:"taskTransitionsPerSecond"`
	// Shares is the fraction of the executions each server finished.
	Shares []float64 `json:"shares"`
	// Speedup is PerSecond over the one-server row of the same delay.
	Speedup float64 `json:"speedup"`
	// CPUMillis is the CPU time the whole machine spent per execution
	// while the row ran (servers, database, this client, the rest), in
	// milliseconds; 0 where /proc/stat cannot be read.
	CPUMillis float64 `json:"cpuMillisPerExecution"`
	// Runs are the executions per second of every run of the row (with
	// -repeat), the row being the median run.
	Runs []float64 `json:"runs,omitempty"`
}

// submitters is how many starts are in flight at once.
const submitters = 64

// scaleWorkflow is three Tasks in a row; their agent is mocked per start
// with the measured delay.
const scaleWorkflow = `{"StartAt":"Read","States":{
"Read":{"Type":"Task","Agent":"Work","ResultPath":"$.read","Next":"Think"},
"Think":{"Type":"Task","Agent":"Work","ResultPath":"$.think","Next":"Answer"},
"Answer":{"Type":"Task","Agent":"Work","ResultPath":"$.answer","End":true}}}`

// server is one `aslrun serve` process of a measurement.
type server struct {
	cmd  *exec.Cmd
	url  string
	logs bytes.Buffer
	done chan error
}

// scaleTable measures every server count and delay of cfg and prints the
// table to w.
func scaleTable(ctx context.Context, w io.Writer, cfg scaleConfig) ([]scaleRun, error) {
	dir, err := os.MkdirTemp(cfg.tmp, "pg-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.tmp = dir
	var errs bytes.Buffer
	migrate := exec.CommandContext(ctx, cfg.aslrun, "migrate", "--db", cfg.db)
	migrate.Stdout, migrate.Stderr = &errs, &errs
	if err := migrate.Run(); err != nil {
		return nil, fmt.Errorf("aslrun migrate: %w: %s", err, errs.String())
	}
	errs.Reset()
	tokens := filepath.Join(dir, "bench.tokens")
	cmd := exec.CommandContext(ctx, cfg.aslrun, "token", "create", "bench", "--role", "operator", "--tokens", tokens)
	cmd.Stderr = &errs
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("aslrun token create: %w: %s", err, errs.String())
	}
	token := strings.TrimSpace(string(out))
	var rows []scaleRun
	for _, delay := range cfg.delays {
		var base float64
		for _, n := range cfg.servers {
			row, err := medianScale(ctx, cfg, tokens, token, n, delay)
			if err != nil {
				return rows, err
			}
			if n == cfg.servers[0] {
				base = row.PerSecond / float64(n)
			}
			row.Speedup = row.PerSecond / base
			rows = append(rows, row)
			shares := make([]string, len(row.Shares))
			for i, s := range row.Shares {
				shares[i] = fmt.Sprintf("%.0f%%", 100*s)
			}
			runs := ""
			if len(row.Runs) > 1 {
				runs = fmt.Sprintf(" (median of %d runs: %s)", len(row.Runs), runsOf(row.Runs))
			}
			fmt.Fprintf(w, "%d server(s), %s, agents %4.0f ms, submit %-6s %5d executions in %6.2f s (accepted in %5.2f s): %7.1f executions/s, %7.1f task transitions/s, ×%.2f of one, shares %s, machine CPU %.2f ms/execution%s\n",
				row.Servers, row.Durability, row.DelayMs, row.Submit, row.Executions, row.Seconds, row.SubmitSeconds, row.PerSecond, row.TaskTransitions, row.Speedup, strings.Join(shares, " "), row.CPUMillis, runs)
		}
	}
	return rows, nil
}

// medianScale measures a row cfg.repeat times (each run with servers of
// its own) and returns its median run by executions per second, with
// every run's rate in Runs.
func medianScale(ctx context.Context, cfg scaleConfig, tokens, token string, n int, delay float64) (scaleRun, error) {
	var runs []scaleRun
	for range max(cfg.repeat, 1) {
		row, err := measureScale(ctx, cfg, tokens, token, n, delay)
		if err != nil {
			return row, err
		}
		runs = append(runs, row)
	}
	row := medianRun(runs)
	if len(runs) > 1 {
		for _, r := range runs {
			row.Runs = append(row.Runs, r.PerSecond)
		}
	}
	return row, nil
}

// medianRun returns the run of runs (at least one) with the median
// executions per second (the lower of the middle two, of an even number).
func medianRun(runs []scaleRun) scaleRun {
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b scaleRun) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
	return sorted[(len(sorted)-1)/2]
}

// runsOf prints rates as "212.6, 198.0, 220.1".
func runsOf(rates []float64) string {
	out := make([]string, len(rates))
	for i, r := range rates {
		out[i] = strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strings.Join(out, ", ")
}

// measureScale starts n servers on the shared database, submits
// n×perServer executions, waits for them all to end, and stops the
// servers.
func measureScale(ctx context.Context, cfg scaleConfig, tokens, token string, n int, delay float64) (scaleRun, error) {
	row := scaleRun{Servers: n, DelayMs: delay * 1000, Submit: cfg.submit, Durability: cfg.durability, Executions: n * cfg.perServer}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	servers := make([]*server, n)
	defer func() {
		for _, s := range servers {
			if s != nil {
				s.stop()
			}
		}
	}()
	for i := range servers {
		s, err := startServer(ctx, cfg, tokens)
		if err != nil {
			return row, err
		}
		servers[i] = s
	}
	before := make([]float64, n)
	for i, s := range servers {
		v, err := finished(ctx, s.url, token)
		if err != nil {
			return row, err
		}
		before[i] = v
	}
	mock := fmt.Sprintf(`{"Work":{"0-999999":{"Return":{"ok":true},"DelaySeconds":%g}}}`, delay)
	prefix := fmt.Sprintf("scale-%d-%d-%d-", n, int(delay*1000), time.Now().UnixNano())
	// Connections are kept for every start in flight, as a load balancer
	// keeps them: the default transport keeps 2 a host, and the other 62
	// starts in flight would each open a connection of their own.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = submitters
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: time.Minute, Transport: transport}
	cpu0, cpuErr := machineCPU()
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(submitters)
	for i := range row.Executions {
		target := servers[0]
		if cfg.submit == "spread" {
			target = servers[i%n]
		}
		g.Go(func() error {
			body := fmt.Sprintf(`{"name":%q,"definition":%s,"input":{"n":%d},"mock":%s}`, prefix+strconv.Itoa(i), scaleWorkflow, i, mock)
			return post(gctx, client, target.url+"/v1/executions", token, body)
		})
	}
	if err := g.Wait(); err != nil {
		return row, err
	}
	row.SubmitSeconds = time.Since(start).Seconds()
	shares := make([]float64, n)
	for {
		total := 0.0
		for i, s := range servers {
			v, err := finished(ctx, s.url, token)
			if err != nil {
				return row, err
			}
			shares[i] = v - before[i]
			total += shares[i]
		}
		if int(total) >= row.Executions {
			break
		}
		select {
		case <-ctx.Done():
			return row, fmt.Errorf("%d servers: %d of %d executions finished before %v", n, int(total), row.Executions, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	row.Seconds = time.Since(start).Seconds()
	if cpu1, err := machineCPU(); err == nil && cpuErr == nil {
		row.CPUMillis = (cpu1 - cpu0).Seconds() * 1000 / float64(row.Executions)
	}
	row.PerSecond = float64(row.Executions) / row.Seconds
	row.TaskTransitions = row.PerSecond * float64(cfg.tasksInRun)
	for i := range shares {
		shares[i] /= float64(row.Executions)
	}
	row.Shares = shares
	return row, nil
}

// startServer starts one `aslrun serve` on a free port and waits until it
// is ready.
func startServer(ctx context.Context, cfg scaleConfig, tokens string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	sock, err := os.MkdirTemp(cfg.tmp, "sock-")
	if err != nil {
		return nil, err
	}
	s := &server{url: "http://" + addr, done: make(chan error, 1)}
	s.cmd = exec.Command(cfg.aslrun, "serve", "--db", cfg.db, "--listen", addr, "--tokens", tokens,
		"--socket", filepath.Join(sock, "s.sock"), "--max-concurrent", strconv.Itoa(cfg.cap),
		"--poll", cfg.poll.String(), "--durability", cfg.durability, "--log-format", "json")
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("aslrun serve ended before it was ready (%v):\n%s", err, s.logs.String())
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("aslrun serve not ready: %w", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the server with SIGTERM (SIGKILL after 30 s).
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// post starts one execution.
func post(ctx context.Context, client *http.Client, url, token, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("start at %s: %s: %s", url, resp.Status, msg)
	}
	// Read to its end, or the transport closes the connection instead of
	// keeping it for the next start.
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// finished is the server's aslrun_executions_finished_total, all statuses.
func finished(ctx context.Context, base, token string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// Uncompressed: this is polled every 50 ms while the servers are
	// measured, and compressing it cost each server 2% of its CPU.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", base, resp.Status)
	}
	return sumMetric(resp.Body, "aslrun_executions_finished_total")
}

// sumMetric adds up every sample of the counter name in a Prometheus text
// exposition.
func sumMetric(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sum := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			return 0, fmt.Errorf("metric line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// machineCPU is the CPU time all the machine's cores have spent busy
// since it started (user, nice, system, irq, softirq and steal of the
// "cpu" line of /proc/stat, Linux only).
func machineCPU() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(data)
}

// parseProcStat reads the busy time of the "cpu" line of a /proc/stat
// (in USER_HZ ticks, 100 a second on Linux).
func parseProcStat(data []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu line", line)
	}
	var ticks int64
	// user nice system idle iowait irq softirq steal: idle and iowait
	// are not busy.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("/proc/stat: cpu field %d %q: want a count of ticks", i, f[i])
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// errNoScale is returned when -mode scale lacks what it needs.
var errNoScale = errors.New("-mode scale needs -aslrun (a built aslrun binary)")

// parseInts reads "1,2,4".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseDelays reads "20ms,0".
func parseDelays(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q: want durations separated by commas (20ms,0)", s)
		}
		out = append(out, d.Seconds())
	}
	return out, nil
}

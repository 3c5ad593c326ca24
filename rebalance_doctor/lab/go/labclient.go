// The lab's franz-go consumer: a poll loop that logs as a Go service does.
//
//	labclient CONFIG.properties CONTROL LOG LEVEL
//
// franz-go says nothing unless the application installs a logger; this one installs the one its
// documentation shows, kgo.BasicLogger at LogLevelInfo (LEVEL "debug": LogLevelDebug). BasicLogger
// writes no time, so LOG holds the output as a container runtime keeps it (CRI log files, what
// `kubectl logs --timestamps` shows): each line behind its RFC3339Nano time and "stderr F ". The
// application's own lines ("assigned: [...]", "processed N records ...") carry no time of their own, as
// Go services under a runtime that adds one are usually written. The lab drives faults from outside:
// signals, and "stall <ms>" in the CONTROL file, read between polls (a slow downstream call; franz-go
// heartbeats from its own goroutine meanwhile).
package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runtimeLog prefixes every line written to it with the time it was written, as a container runtime does.
type runtimeLog struct {
	mu      sync.Mutex
	out     *os.File
	partial []byte
}

func (w *runtimeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		at := strings.IndexByte(string(w.partial), '\n')
		if at < 0 {
			return len(p), nil
		}
		stamp := time.Now().UTC().Format(time.RFC3339Nano)
		if _, err := fmt.Fprintf(w.out, "%s stderr F %s\n", stamp, w.partial[:at]); err != nil {
			return 0, err
		}
		w.partial = w.partial[at+1:]
	}
}

func readProperties(path string) map[string]string {
	out := map[string]string{}
	file, err := os.Open(path)
	if err != nil {
		log.Fatalf("cannot read %s: %v", path, err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := scanner.Text()
		at := strings.Index(line, "=")
		if at > 0 && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			value := strings.TrimSpace(line[at+1:])
			if value != "" { // a key without a value is left unset (the library's default)
				out[strings.TrimSpace(line[:at])] = value
			}
		}
	}
	return out
}

func controlCommand(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	os.Remove(path)
	return strings.TrimSpace(string(data))
}

func millis(config map[string]string, key string) (time.Duration, bool) {
	value, ok := config[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		log.Fatalf("%s=%s is not a number", key, value)
	}
	return time.Duration(n) * time.Millisecond, true
}

func partitions(assigned map[string][]int32) string {
	var names []string
	for topic, parts := range assigned {
		for _, p := range parts {
			names = append(names, fmt.Sprintf("%s-%d", topic, p))
		}
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ", ") + "]"
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: labclient CONFIG.properties CONTROL LOG LEVEL")
		os.Exit(2)
	}
	configPath, control, logPath, level := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	file, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot open %s: %v\n", logPath, err)
		os.Exit(1)
	}
	out := &runtimeLog{out: file}
	app := log.New(out, "", 0)
	log.SetOutput(out)
	log.SetFlags(0)

	config := readProperties(configPath)
	topic := config["lab.topic"]
	if topic == "" {
		topic = "orders"
	}
	logLevel := kgo.LogLevelInfo
	if level == "debug" {
		logLevel = kgo.LogLevelDebug
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(config["bootstrap.servers"], ",")...),
		kgo.ConsumerGroup(config["group.id"]),
		kgo.ConsumeTopics(topic),
		kgo.WithLogger(kgo.BasicLogger(out, logLevel, nil)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			app.Printf("assigned: %s", partitions(assigned))
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			app.Printf("revoked: %s", partitions(revoked))
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			app.Printf("lost: %s", partitions(lost))
		}),
	}
	if d, ok := millis(config, "session.timeout.ms"); ok {
		opts = append(opts, kgo.SessionTimeout(d))
	}
	if d, ok := millis(config, "heartbeat.interval.ms"); ok {
		opts = append(opts, kgo.HeartbeatInterval(d))
	}
	if d, ok := millis(config, "max.poll.interval.ms"); ok { // franz-go's nearest: the rebalance timeout
		opts = append(opts, kgo.RebalanceTimeout(d))
	}
	if id, ok := config["client.id"]; ok {
		opts = append(opts, kgo.ClientID(id))
	}
	if id, ok := config["group.instance.id"]; ok {
		opts = append(opts, kgo.InstanceID(id))
	}
	if config["auto.offset.reset"] == "earliest" {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		app.Printf("consumer failed: %v", err)
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	app.Printf("consumer started for topic %s", topic)
	processed, lastReport := 0, time.Now()
	for stopping := false; !stopping; {
		select {
		case <-stop:
			stopping = true
			continue
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fetches := client.PollFetches(ctx)
		cancel()
		if fetches.IsClientClosed() {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			switch {
			case err == context.DeadlineExceeded:
			case t == "": // an error of the client's, not of a partition (a group session that ended)
				app.Printf("consumer error: %v", err)
			default:
				app.Printf("consumer error: %s-%d: %v", t, p, err)
			}
		})
		processed += fetches.NumRecords()
		if command := controlCommand(control); strings.HasPrefix(command, "stall ") {
			ms, _ := strconv.Atoi(strings.Fields(command)[1])
			app.Printf("calling the downstream service for the current batch")
			time.Sleep(time.Duration(ms) * time.Millisecond)
			app.Printf("downstream service answered after %d ms", ms)
		}
		if elapsed := time.Since(lastReport); elapsed >= 10*time.Second {
			app.Printf("processed %d records in the last %d s", processed, int(elapsed.Seconds()))
			processed, lastReport = 0, time.Now()
		}
	}
	app.Printf("closing the consumer")
	client.Close()
	app.Printf("consumer closed")
}

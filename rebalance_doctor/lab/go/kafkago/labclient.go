// The lab's kafka-go consumer: a kafka.Reader in a consumer group, logging as a Go service does.
//
//	labclient CONFIG.properties CONTROL LOG LEVEL
//
// kafka-go says nothing unless the application gives the Reader a Logger and an ErrorLogger; this one
// gives both Go's log package (log.Printf, standard flags: '2026/12/07 03:10:00 ...'), as applications
// commonly do, with the process's stderr being LOG (a container runtime's log of the process). kafka-go
// has no levels, so LEVEL "debug" changes nothing. The application's own lines ("processed N records ...")
// use the same logger. The lab drives faults from outside: signals, and "stall <ms>" in the CONTROL file,
// read between reads (a slow downstream call; kafka-go heartbeats from its own goroutine meanwhile).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

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

func millis(config map[string]string, key string) time.Duration {
	value, ok := config[key]
	if !ok {
		return 0 // kafka-go's default
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		log.Fatalf("%s=%s is not a number", key, value)
	}
	return time.Duration(n) * time.Millisecond
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: labclient CONFIG.properties CONTROL LOG LEVEL")
		os.Exit(2)
	}
	configPath, control, logPath := os.Args[1], os.Args[2], os.Args[3]
	file, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot open %s: %v\n", logPath, err)
		os.Exit(1)
	}
	// the process's stderr is its log, as a container runtime keeps it (a panic's trace lands there too)
	if err := syscall.Dup3(int(file.Fd()), 2, 0); err != nil {
		fmt.Fprintf(os.Stderr, "cannot redirect stderr: %v\n", err)
		os.Exit(1)
	}
	log.SetOutput(os.Stderr)

	config := readProperties(configPath)
	topic := config["lab.topic"]
	if topic == "" {
		topic = "orders"
	}
	readerConfig := kafka.ReaderConfig{
		Brokers:           strings.Split(config["bootstrap.servers"], ","),
		GroupID:           config["group.id"],
		Topic:             topic,
		SessionTimeout:    millis(config, "session.timeout.ms"),
		HeartbeatInterval: millis(config, "heartbeat.interval.ms"),
		RebalanceTimeout:  millis(config, "max.poll.interval.ms"), // kafka-go's nearest: the rebalance timeout
		CommitInterval:    time.Second,
		Logger:            kafka.LoggerFunc(log.Printf),
		ErrorLogger:       kafka.LoggerFunc(log.Printf),
	}
	if config["auto.offset.reset"] == "earliest" {
		readerConfig.StartOffset = kafka.FirstOffset
	}
	if id, ok := config["client.id"]; ok {
		readerConfig.Dialer = &kafka.Dialer{ClientID: id, Timeout: 10 * time.Second, DualStack: true}
	}
	reader := kafka.NewReader(readerConfig)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	log.Printf("consumer started for topic %s", topic)
	processed, lastReport := 0, time.Now()
	for stopping := false; !stopping; {
		select {
		case <-stop:
			stopping = true
			continue
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := reader.ReadMessage(ctx)
		cancel()
		switch {
		case err == nil:
			processed++
		case errors.Is(err, io.EOF):
			stopping = true
			continue
		case errors.Is(err, context.DeadlineExceeded):
		default:
			log.Printf("consumer error: %v", err)
		}
		if command := controlCommand(control); strings.HasPrefix(command, "stall ") {
			ms, _ := strconv.Atoi(strings.Fields(command)[1])
			log.Printf("calling the downstream service for the current batch")
			time.Sleep(time.Duration(ms) * time.Millisecond)
			log.Printf("downstream service answered after %d ms", ms)
		}
		if elapsed := time.Since(lastReport); elapsed >= 10*time.Second {
			log.Printf("processed %d records in the last %d s", processed, int(elapsed.Seconds()))
			processed, lastReport = 0, time.Now()
		}
	}
	log.Printf("closing the consumer")
	if err := reader.Close(); err != nil {
		log.Printf("close failed: %v", err)
	}
	log.Printf("consumer closed")
}

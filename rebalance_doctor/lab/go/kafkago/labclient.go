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
	"context"
	"errors"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"labclient/common"
)

// millis is a setting in milliseconds, 0 (kafka-go's default) when it is not set.
func millis(config map[string]string, key string) time.Duration {
	d, _ := common.Millis(config, key)
	return d
}

func main() {
	configPath, control, logPath, _ := common.Args()
	common.LogToStderr(logPath)

	config := common.ReadProperties(configPath)
	topic := common.Topic(config)
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
		common.StallIfAsked(control)
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

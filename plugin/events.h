/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  events.h - ordered, numbered events: early job ends and reservations
 *****************************************************************************
 *  Part of FlexCo for Slurm.  Licensed under the GNU GPL version 2 or later.
\*****************************************************************************/

#ifndef _FLEXCO_EVENTS_H
#define _FLEXCO_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "flexco_conf.h"
#include "privacy.h"

#define EVENTS_STATE_FILE "flexco_events.state"

/* Event types (the "type" member of every event; see doc/events.md). */
#define EVENT_JOB_ENDED_EARLY "job_ended_early"
#define EVENT_RESV_ACTIVATED "reservation_activated"
#define EVENT_RESV_ENDED "reservation_ended"
#define EVENT_RESV_DELETED "reservation_deleted"
/* Reserved for part jobs, published through events_publish() once the
 * plugin submits them. */
#define EVENT_PART_JOB_STARTED "part_job_started"
#define EVENT_PART_JOB_ENDED "part_job_ended"

/* What one events_query_json() call found. */
typedef struct {
	uint64_t next;		/* the "after" to ask with next time */
	uint64_t oldest;	/* oldest sequence number retained, 0 if none */
	uint64_t latest;	/* highest sequence number issued, 0 if none */
	bool lost;		/* some event after "after" cannot be delivered */
	uint32_t count;		/* events in this page */
} events_page_t;

/*
 * Load the saved state (sequence numbers, recent events) from
 * StateSaveLocation and start the events thread.  Called by the agent
 * thread once slurmctld's state is loaded, with no slurmctld lock held.
 */
extern int events_start(const flexco_conf_t *conf);

/*
 * Stop and join the events thread, save the state a last time and free the
 * buffer.  Called from fini() after the HTTP service has stopped, with no
 * slurmctld lock held.
 */
extern void events_stop(void);

/*
 * A job ended (prep/flexco's epilog hook, every end state).  Called with
 * slurmctld's job write lock held: copies a few fields into a preallocated
 * queue under a private mutex, no I/O, no allocation, no slurmctld lock.
 * Safe before events_start() (the records wait) and after events_stop().
 */
struct job_record;
extern void events_job_end(struct job_record *job_ptr);

/* Highest sequence number issued so far (0 if none). */
extern uint64_t events_latest(void);

/*
 * The JSON document {"events":[...],"next":N,"oldest":O,"latest":L,
 * "lost":bool} with at most max events whose seq is greater than after
 * that viewer may see (slurm.conf PrivateData; NULL: every event), oldest
 * first.  "next" is the seq of the last event looked at, shown or not.
 * Returns a malloc'd string (NULL only if out of memory) and fills page.
 * Never blocks on anything but the buffer's own mutex.
 */
extern char *events_query_json(uint64_t after, uint32_t max,
			       const flexco_viewer_t *viewer,
			       events_page_t *page);

/*
 * fn is called (by the events thread, no lock held) after every batch of
 * new events; NULL to unregister.  Used by the HTTP service to wake
 * long-polling requests.
 */
extern void events_set_listener(void (*fn)(void));

/* Counters for GET /v1/stats; a new reference. */
extern json_t *events_stats_json(void);

/*
 * The hook for event sources other than the built-in ones (part jobs,
 * once they exist: EVENT_PART_JOB_STARTED / EVENT_PART_JOB_ENDED).
 * Queues an event of the given type with the members of fields (a JSON
 * object; the reference is stolen); the events thread numbers and
 * publishes it within a second.  Safe from any thread, also with
 * slurmctld locks held (it only takes a private mutex); never blocks.
 * Returns 0, or -1 if the queue is full or the events thread is not
 * running (the event is then dropped and counted).
 */
extern int events_publish(const char *type, json_t *fields);

/*
 * events_publish() of an event that shows a job or a reservation: acl
 * (copied) says who may see it when slurm.conf's PrivateData hides other
 * users' jobs or reservations.
 */
extern int events_publish_private(const char *type, json_t *fields,
				  const flexco_acl_t *acl);

#endif

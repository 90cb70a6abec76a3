/*
 * What the task registry's files share (taskreg.c, taskreg-jobs.c).
 * Nothing else includes this file.
 */

#ifndef TASKREG_INT_H
#define TASKREG_INT_H

#define TASKREG_TEXT	1024	/* bytes of a title, result or error kept */
#define TASKREG_ENDED	4096	/* ended requests of jobs kept */

/* taskreg-jobs.c */
void	 taskreg_jobs_init(void);
void	 taskreg_jobs_collect(json_t *);

#endif

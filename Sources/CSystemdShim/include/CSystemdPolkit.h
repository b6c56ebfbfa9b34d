// polkit's CheckAuthorization over sd-bus, asked without blocking: a D-Bus service must keep
// answering other callers while polkit (and maybe an authentication agent) decides.
#ifndef FETCHD_CSYSTEMD_POLKIT_H
#define FETCHD_CSYSTEMD_POLKIT_H

#include <stdint.h>
#include <systemd/sd-bus.h>

/// polkit's answer: authorized, not authorized, or not authorized unless the user
/// authenticates (a challenge), or no answer at all.
enum fetchd_polkit_answer {
    FETCHD_POLKIT_AUTHORIZED = 1,
    FETCHD_POLKIT_NOT_AUTHORIZED = 0,
    FETCHD_POLKIT_CHALLENGE = 2,
    FETCHD_POLKIT_NO_ANSWER = -1,
};

/// Called exactly once per check: with the answer, or with FETCHD_POLKIT_NO_ANSWER and why
/// (`error_name` may be NULL; the strings live only during the call).
typedef void (*fetchd_polkit_fn)(void *context, int answer, const char *error_name, const char *error_text);

/// Asks polkit whether the connection `sender` (a unique name) may do `action_id`, letting
/// polkit ask the user to authenticate when `interactive` is set, within `timeout_usec`.
/// `done` runs on a later `sd_bus_process`, or when the connection closes first. Returns a
/// negative errno when the question could not be sent (then `done` never runs).
int fetchd_polkit_check(sd_bus *bus, const char *sender, const char *action_id, int interactive,
                        uint64_t timeout_usec, fetchd_polkit_fn done, void *context);

#endif

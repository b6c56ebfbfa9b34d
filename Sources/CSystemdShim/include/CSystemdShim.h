// A thin shim over the parts of libsystemd fetchd uses. sd_bus_message_append and friends are
// variadic, which Swift cannot call, so the one bus call fetchd makes is written here in C.
#ifndef FETCHD_CSYSTEMD_SHIM_H
#define FETCHD_CSYSTEMD_SHIM_H

#include <stdint.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>

/// Opens a connection to the service manager: the user manager's bus when `user` is non-zero,
/// else the system bus. Returns a negative errno on failure.
int fetchd_bus_open(int user, sd_bus **bus);

/// Starts the transient timer `timer_name` that fires once at `on_calendar` (a systemd calendar
/// spec) and activates the service of the same name (a transient timer cannot name another).
/// On failure returns a negative errno and, when the manager said why, copies its message into
/// `error_text`.
int fetchd_bus_start_transient_timer(sd_bus *bus, const char *timer_name,
                                     const char *description, const char *on_calendar,
                                     uint64_t accuracy_usec, char *error_text, size_t error_capacity);

/// Stops a unit (used to replace the previous planned timer). Unknown units are not an error.
int fetchd_bus_stop_unit(sd_bus *bus, const char *unit_name, char *error_text, size_t error_capacity);

#endif

// A thin shim over the parts of libsystemd fetchd uses. sd_bus_message_append, sd_bus_message_read
// and friends are variadic, which Swift cannot call, so bus calls are written here in C, each
// with a typed signature.
#ifndef FETCHD_CSYSTEMD_SHIM_H
#define FETCHD_CSYSTEMD_SHIM_H

#include <stdint.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>
#include "CSystemdServer.h"
#include "CSystemdPolkit.h"
#include "CSystemdDraft.h"

/// Opens a connection to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` if set, else the standard
/// socket) or the user's bus, with `method_timeout_usec` as the limit of every blocking call on it
/// (AddMatch included). Returns a negative errno on failure.
int fetchd_bus_open_with_timeout(int user, uint64_t method_timeout_usec, sd_bus **bus);

/// Opens a connection to the bus at `address` (`unix:path=...`), as a bus client, with the same
/// call timeout. Returns a negative errno on failure.
int fetchd_bus_open_address(const char *address, uint64_t method_timeout_usec, sd_bus **bus);

/// Adds a match rule (`type='signal',sender=...`); `handler` runs with `userdata` for every
/// message that matches while the bus is processed. The slot belongs to the bus (freed with it).
/// Installs the rule on the bus as well, synchronously. Returns a negative errno on failure.
int fetchd_bus_add_match(sd_bus *bus, const char *rule, sd_bus_message_handler_t handler, void *userdata);

/// Sends the method call `call` (built with sd_bus_message_new_method_call and the appenders of
/// CSystemdServer.h) and waits for the reply (`*reply`, to unref). On failure returns a negative
/// errno and copies the D-Bus error's name and message, when there is one, into `error_name`
/// and `error_text`.
int fetchd_bus_call(sd_bus *bus, sd_bus_message *call, sd_bus_message **reply, char *error_name,
                    size_t error_name_capacity, char *error_text, size_t error_capacity);

/// Reads a boolean (`b`) into `*value` (0 or 1). Returns 0 at the end of the container.
int fetchd_bus_message_read_bool(sd_bus_message *message, int *value);

/// Reads a string-like value: `type` is 's' (string), 'o' (object path) or 'g' (signature).
/// `*value` points into the message (valid while the message is). Returns 0 at the end.
int fetchd_bus_message_read_string(sd_bus_message *message, char type, const char **value);

/// Reads a signed or narrow integer (`type` 'y', 'n', 'q', 'i', 'u' or 'x'), widened to
/// 64 bits. Returns 0 at the end of the container.
int fetchd_bus_message_read_int64(sd_bus_message *message, char type, int64_t *value);

/// Reads an unsigned 64-bit integer (`t`). Returns 0 at the end of the container.
int fetchd_bus_message_read_uint64(sd_bus_message *message, uint64_t *value);

/// Reads a double (`d`). Returns 0 at the end of the container.
int fetchd_bus_message_read_double(sd_bus_message *message, double *value);

/// Enters a container: `type` 'a' (array), 'v' (variant), 'r' (struct) or 'e' (dict entry) with
/// the signature of its contents. Returns 0 at the end of the enclosing container.
int fetchd_bus_message_enter(sd_bus_message *message, char type, const char *contents);

/// Leaves the container entered last (skipping what was not read of it).
int fetchd_bus_message_exit(sd_bus_message *message);

/// The type of the next value and, for containers, the signature of its contents. Returns 0
/// at the end of the current container.
int fetchd_bus_message_peek(sd_bus_message *message, char *type, const char **contents);

/// Skips values of the given signature (e.g. "v", "as").
int fetchd_bus_message_skip(sd_bus_message *message, const char *types);

#endif

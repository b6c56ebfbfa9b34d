// The server side of fetchd's D-Bus API over sd-bus: the object's vtable (sd-bus builds the
// introspection data and the Properties interface from it) and typed writers for replies and
// signals (and the client's method calls), whose sd-bus counterparts are variadic.
#ifndef FETCHD_CSYSTEMD_SERVER_H
#define FETCHD_CSYSTEMD_SERVER_H

#include <stdint.h>
#include <systemd/sd-bus.h>

/// Called for every method call on the fetchd object, with the context given to
/// `fetchd_bus_add_fetchd1`. The callee takes its own reference on `call` if it replies later;
/// it returns 0, or a negative errno to have sd-bus reply with that error at once.
typedef int (*fetchd_bus_method_fn)(void *context, sd_bus_message *call);

/// Publishes the `org.fetchd.Fetchd1` interface at `path`: method calls go to `method` with
/// `context`; the constant properties `Version` and `Scope` read `version` and `scope` (copied).
/// The object lives as long as the connection. Returns a negative errno on failure.
int fetchd_bus_add_fetchd1(sd_bus *bus, const char *path, fetchd_bus_method_fn method, void *context,
                           const char *version, const char *scope);

/// Says whether the object `path` exists for a caller of `uid` (1) or not (0).
typedef int (*fetchd_bus_find_fn)(void *context, const char *path, uint32_t uid);

/// Appends the value of `property` of the object `path` to `reply` (its signature is the
/// property's); returns a negative errno when there is none.
typedef int (*fetchd_bus_property_fn)(void *context, const char *path, const char *property, sd_bus_message *reply);

/// Publishes the objects under `prefix` that carry `org.fetchd.Fetchd1.Handler` (one per
/// handler): `find` says which exist for the calling uid, `property` reads their properties.
/// The objects live as long as the connection. Returns a negative errno on failure.
int fetchd_bus_add_handler_objects(sd_bus *bus, const char *prefix, fetchd_bus_find_fn find,
                                   fetchd_bus_property_fn property, void *context);

/// Starts `org.freedesktop.DBus.Properties.PropertiesChanged` of `interface` from `path`,
/// directed to `destination` (`*signal`, to unref): append the changed `a{sv}` with the option
/// writers, then `fetchd_bus_finish_properties_changed`.
int fetchd_bus_new_properties_changed(sd_bus *bus, const char *path, const char *interface, const char *destination,
                                      sd_bus_message **signal);

/// Ends a PropertiesChanged signal: no invalidated properties (`as`, empty).
int fetchd_bus_finish_properties_changed(sd_bus_message *signal);

/// Appends an object path (`o`).
int fetchd_bus_append_object_path(sd_bus_message *message, const char *path);

/// Appends a boolean (`b`).
int fetchd_bus_append_bool(sd_bus_message *message, int value);

/// Appends an unsigned 64-bit value (`t`).
int fetchd_bus_append_uint64(sd_bus_message *message, uint64_t value);

/// Asks the bus for the well-known `name` (no queueing: an owner already there is an error).
int fetchd_bus_request_name(sd_bus *bus, const char *name);

/// The effective uid of the peer that sent `message`, as the bus vouches for it.
int fetchd_bus_message_sender_uid(sd_bus_message *message, uint32_t *uid);

/// Replies to `call` with the D-Bus error `name` and the human-readable `text`.
int fetchd_bus_reply_error(sd_bus_message *call, const char *name, const char *text);

/// Starts the reply to `call` (`*reply`, to unref), to be filled with the writers below and sent
/// with `fetchd_bus_send`.
int fetchd_bus_new_reply(sd_bus_message *call, sd_bus_message **reply);

/// Starts the signal `member` of `interface` from `path` (`*signal`, to unref); `destination`
/// directs it to one connection (NULL: to every connection whose match rules ask for it).
int fetchd_bus_new_signal(sd_bus *bus, const char *path, const char *interface, const char *member,
                          const char *destination, sd_bus_message **signal);

/// Sends `message` (queued when the socket is full; `fetchd_bus_wants_write` then says so).
int fetchd_bus_send(sd_bus_message *message);

/// Whether the connection has queued bytes it could not write yet.
int fetchd_bus_wants_write(sd_bus *bus);

/// Appends a string (`s`).
int fetchd_bus_append_string(sd_bus_message *message, const char *value);

/// Appends an array of `count` strings (`as`).
int fetchd_bus_append_strings(sd_bus_message *message, const char *const *values, size_t count);

/// Appends a file descriptor (`h`); sd-bus sends a duplicate, the caller keeps `fd`.
int fetchd_bus_append_fd(sd_bus_message *message, int fd);

/// Opens the dictionary `a{sv}`; entries follow, then `fetchd_bus_close_container`.
int fetchd_bus_open_options(sd_bus_message *message);

/// Appends the entry `key` of a dictionary opened with `fetchd_bus_open_options`, its value a
/// string (`s`).
int fetchd_bus_append_option_string(sd_bus_message *message, const char *key, const char *value);

/// The same with a signed 64-bit value (`x`).
int fetchd_bus_append_option_int64(sd_bus_message *message, const char *key, int64_t value);

/// The same with an unsigned 64-bit value (`t`).
int fetchd_bus_append_option_uint64(sd_bus_message *message, const char *key, uint64_t value);

/// The same with a boolean value (`b`).
int fetchd_bus_append_option_bool(sd_bus_message *message, const char *key, int value);

/// The same with a double (`d`).
int fetchd_bus_append_option_double(sd_bus_message *message, const char *key, double value);

/// The same with a map of strings (`a{ss}`): `count` names and their values, in order.
int fetchd_bus_append_option_string_map(sd_bus_message *message, const char *key, const char *const *names,
                                        const char *const *values, size_t count);

/// The same with an array of strings (`as`).
int fetchd_bus_append_option_strings(sd_bus_message *message, const char *key, const char *const *values,
                                     size_t count);

/// Closes the container opened last.
int fetchd_bus_close_container(sd_bus_message *message);

#endif

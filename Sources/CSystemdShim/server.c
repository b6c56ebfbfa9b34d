#include "CSystemdServer.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

// What the object's vtable entries reach: the Swift side's method entry and the constant
// properties. Freed with the object's slot.
struct fetchd1_object {
    fetchd_bus_method_fn method;
    void *context;
    char *version;
    char *scope;
};

static int method_trampoline(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    (void)error;
    struct fetchd1_object *object = userdata;
    int r = object->method(object->context, call);
    // Positive: handled, the reply follows later. 0 would tell sd-bus the call is not handled
    // here, and it would answer UnknownMethod itself.
    return r < 0 ? r : 1;
}

static int get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus, (void)path, (void)interface, (void)property, (void)error;
    return sd_bus_message_append(reply, "s", ((struct fetchd1_object *)userdata)->version);
}

static int get_scope(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus, (void)path, (void)interface, (void)property, (void)error;
    return sd_bus_message_append(reply, "s", ((struct fetchd1_object *)userdata)->scope);
}

static void free_object(void *userdata) {
    struct fetchd1_object *object = userdata;
    free(object->version);
    free(object->scope);
    free(object);
}

// The interface as data/dbus-1/org.fetchd.Fetchd1.xml describes it (a test compares the two).
static const sd_bus_vtable fetchd1_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Version", "s", get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Scope", "s", get_scope, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD_WITH_NAMES("RegisterHandler", "sa{sv}", SD_BUS_PARAM(name) SD_BUS_PARAM(options),
                             "s", SD_BUS_PARAM(handler), method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("UnregisterHandler", "s", SD_BUS_PARAM(name),
                             "", "", method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ListHandlers", "", "",
                             "as", SD_BUS_PARAM(names), method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("GetHandler", "s", SD_BUS_PARAM(name),
                             "a{sv}", SD_BUS_PARAM(status), method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("GetHandlerObject", "s", SD_BUS_PARAM(name),
                             "o", SD_BUS_PARAM(object), method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("ReportUse", "s", SD_BUS_PARAM(name),
                             "", "", method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("FetchNow", "sa{sv}", SD_BUS_PARAM(name) SD_BUS_PARAM(options),
                             "", "", method_trampoline, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("OpenSnapshot", "sa{sv}", SD_BUS_PARAM(name) SD_BUS_PARAM(options),
                             "ha{sv}", SD_BUS_PARAM(content) SD_BUS_PARAM(metadata), method_trampoline,
                             SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL_WITH_NAMES("FetchCompleted", "sss", SD_BUS_PARAM(name) SD_BUS_PARAM(result) SD_BUS_PARAM(version), 0),
    SD_BUS_VTABLE_END,
};

int fetchd_bus_add_fetchd1(sd_bus *bus, const char *path, fetchd_bus_method_fn method, void *context,
                           const char *version, const char *scope) {
    struct fetchd1_object *object = calloc(1, sizeof *object);
    if (!object) return -ENOMEM;
    object->method = method;
    object->context = context;
    object->version = strdup(version);
    object->scope = strdup(scope);
    if (!object->version || !object->scope) {
        free_object(object);
        return -ENOMEM;
    }
    sd_bus_slot *slot = NULL;
    int r = sd_bus_add_object_vtable(bus, &slot, path, "org.fetchd.Fetchd1", fetchd1_vtable, object);
    if (r < 0) {
        free_object(object);
        return r;
    }
    // The slot belongs to the connection from here on and frees the object with it.
    sd_bus_slot_set_destroy_callback(slot, free_object);
    sd_bus_slot_set_floating(slot, 1);
    return 0;
}

int fetchd_bus_request_name(sd_bus *bus, const char *name) { return sd_bus_request_name(bus, name, 0); }

int fetchd_bus_message_sender_uid(sd_bus_message *message, uint32_t *uid) {
    sd_bus_creds *creds = NULL;
    int r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID, &creds);
    if (r < 0) return r;
    uid_t value = 0;
    r = sd_bus_creds_get_euid(creds, &value);
    sd_bus_creds_unref(creds);
    if (r < 0) return r;
    *uid = (uint32_t)value;
    return 0;
}

int fetchd_bus_reply_error(sd_bus_message *call, const char *name, const char *text) {
    return sd_bus_reply_method_errorf(call, name, "%s", text);
}

int fetchd_bus_new_reply(sd_bus_message *call, sd_bus_message **reply) {
    return sd_bus_message_new_method_return(call, reply);
}

int fetchd_bus_new_signal(sd_bus *bus, const char *path, const char *interface, const char *member,
                          const char *destination, sd_bus_message **signal) {
    sd_bus_message *message = NULL;
    int r = sd_bus_message_new_signal(bus, &message, path, interface, member);
    if (r >= 0 && destination) r = sd_bus_message_set_destination(message, destination);
    if (r < 0) {
        sd_bus_message_unref(message);
        return r;
    }
    *signal = message;
    return 0;
}

int fetchd_bus_send(sd_bus_message *message) { return sd_bus_send(NULL, message, NULL); }

int fetchd_bus_wants_write(sd_bus *bus) {
    uint64_t queued = 0;
    int r = sd_bus_get_n_queued_write(bus, &queued);
    return r < 0 ? r : queued > 0;
}

int fetchd_bus_append_string(sd_bus_message *message, const char *value) {
    return sd_bus_message_append_basic(message, 's', value);
}

int fetchd_bus_append_strings(sd_bus_message *message, const char *const *values, size_t count) {
    int r = sd_bus_message_open_container(message, 'a', "s");
    for (size_t i = 0; r >= 0 && i < count; i++) r = sd_bus_message_append_basic(message, 's', values[i]);
    return r < 0 ? r : sd_bus_message_close_container(message);
}

int fetchd_bus_append_fd(sd_bus_message *message, int fd) { return sd_bus_message_append_basic(message, 'h', &fd); }

int fetchd_bus_open_options(sd_bus_message *message) { return sd_bus_message_open_container(message, 'a', "{sv}"); }

// Opens the entry `key` with a variant of `type`; the caller appends the value and calls
// close_entry.
static int open_entry(sd_bus_message *message, const char *key, const char *type) {
    int r = sd_bus_message_open_container(message, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(message, 's', key);
    if (r >= 0) r = sd_bus_message_open_container(message, 'v', type);
    return r;
}

static int close_entry(sd_bus_message *message, int r) {
    if (r >= 0) r = sd_bus_message_close_container(message);
    if (r >= 0) r = sd_bus_message_close_container(message);
    return r;
}

int fetchd_bus_append_option_string(sd_bus_message *message, const char *key, const char *value) {
    int r = open_entry(message, key, "s");
    if (r >= 0) r = sd_bus_message_append_basic(message, 's', value);
    return close_entry(message, r);
}

int fetchd_bus_append_option_int64(sd_bus_message *message, const char *key, int64_t value) {
    int r = open_entry(message, key, "x");
    if (r >= 0) r = sd_bus_message_append_basic(message, 'x', &value);
    return close_entry(message, r);
}

int fetchd_bus_append_option_uint64(sd_bus_message *message, const char *key, uint64_t value) {
    int r = open_entry(message, key, "t");
    if (r >= 0) r = sd_bus_message_append_basic(message, 't', &value);
    return close_entry(message, r);
}

int fetchd_bus_append_option_bool(sd_bus_message *message, const char *key, int value) {
    int r = open_entry(message, key, "b");
    int boolean = value ? 1 : 0;
    if (r >= 0) r = sd_bus_message_append_basic(message, 'b', &boolean);
    return close_entry(message, r);
}

int fetchd_bus_append_option_double(sd_bus_message *message, const char *key, double value) {
    int r = open_entry(message, key, "d");
    if (r >= 0) r = sd_bus_message_append_basic(message, 'd', &value);
    return close_entry(message, r);
}

int fetchd_bus_append_option_string_map(sd_bus_message *message, const char *key, const char *const *names,
                                        const char *const *values, size_t count) {
    int r = open_entry(message, key, "a{ss}");
    if (r >= 0) r = sd_bus_message_open_container(message, 'a', "{ss}");
    for (size_t i = 0; r >= 0 && i < count; i++) {
        r = sd_bus_message_open_container(message, 'e', "ss");
        if (r >= 0) r = sd_bus_message_append_basic(message, 's', names[i]);
        if (r >= 0) r = sd_bus_message_append_basic(message, 's', values[i]);
        if (r >= 0) r = sd_bus_message_close_container(message);
    }
    if (r >= 0) r = sd_bus_message_close_container(message);
    return close_entry(message, r);
}

int fetchd_bus_append_option_strings(sd_bus_message *message, const char *key, const char *const *values,
                                     size_t count) {
    int r = open_entry(message, key, "as");
    if (r >= 0) r = fetchd_bus_append_strings(message, values, count);
    return close_entry(message, r);
}

int fetchd_bus_close_container(sd_bus_message *message) { return sd_bus_message_close_container(message); }

// The handler objects: which exist for the caller, and their properties, both asked of Swift.
struct handler_objects {
    fetchd_bus_find_fn find;
    fetchd_bus_property_fn property;
    void *context;
};

static int get_handler_property(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus, (void)interface, (void)error;
    struct handler_objects *objects = userdata;
    return objects->property(objects->context, path, property, reply);
}

static int find_handler_object(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                               sd_bus_error *error) {
    (void)interface, (void)error;
    struct handler_objects *objects = userdata;
    // Only the caller's own objects exist for it: another uid's handler is not even named.
    sd_bus_message *call = sd_bus_get_current_message(bus);
    uint32_t uid = 0;
    if (!call || fetchd_bus_message_sender_uid(call, &uid) < 0) return 0;
    if (objects->find(objects->context, path, uid) <= 0) return 0;
    *found = objects;
    return 1;
}

#define HANDLER_PROPERTY(name, type, flags) SD_BUS_PROPERTY(name, type, get_handler_property, 0, flags)

// org.fetchd.Fetchd1.Handler, as data/dbus-1/org.fetchd.Fetchd1.xml describes it. fetchd sends
// PropertiesChanged itself, directed to the handler's uid, so the flags only document it.
static const sd_bus_vtable handler_vtable[] = {
    SD_BUS_VTABLE_START(0),
    HANDLER_PROPERTY("Name", "s", SD_BUS_VTABLE_PROPERTY_CONST),
    HANDLER_PROPERTY("Kind", "s", SD_BUS_VTABLE_PROPERTY_CONST),
    HANDLER_PROPERTY("LastResult", "s", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("LastReason", "s", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("LastAttemptAt", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("LastSuccessAt", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("NextEligibleAt", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("ConsecutiveFailures", "t", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    HANDLER_PROPERTY("Version", "s", SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END,
};

int fetchd_bus_add_handler_objects(sd_bus *bus, const char *prefix, fetchd_bus_find_fn find,
                                   fetchd_bus_property_fn property, void *context) {
    struct handler_objects *objects = calloc(1, sizeof *objects);
    if (!objects) return -ENOMEM;
    objects->find = find;
    objects->property = property;
    objects->context = context;
    sd_bus_slot *slot = NULL;
    int r = sd_bus_add_fallback_vtable(bus, &slot, prefix, "org.fetchd.Fetchd1.Handler", handler_vtable,
                                       find_handler_object, objects);
    if (r < 0) {
        free(objects);
        return r;
    }
    sd_bus_slot_set_destroy_callback(slot, free);
    sd_bus_slot_set_floating(slot, 1);
    return 0;
}

int fetchd_bus_new_properties_changed(sd_bus *bus, const char *path, const char *interface, const char *destination,
                                      sd_bus_message **signal) {
    int r = fetchd_bus_new_signal(bus, path, "org.freedesktop.DBus.Properties", "PropertiesChanged", destination, signal);
    if (r < 0) return r;
    r = sd_bus_message_append_basic(*signal, 's', interface);
    if (r < 0) {
        *signal = sd_bus_message_unref(*signal);
        return r;
    }
    return 0;
}

int fetchd_bus_finish_properties_changed(sd_bus_message *signal) {
    int r = sd_bus_message_open_container(signal, 'a', "s");
    return r < 0 ? r : sd_bus_message_close_container(signal);
}

int fetchd_bus_append_object_path(sd_bus_message *message, const char *path) {
    return sd_bus_message_append_basic(message, 'o', path);
}

int fetchd_bus_append_bool(sd_bus_message *message, int value) {
    int boolean = value ? 1 : 0;
    return sd_bus_message_append_basic(message, 'b', &boolean);
}

int fetchd_bus_append_uint64(sd_bus_message *message, uint64_t value) {
    return sd_bus_message_append_basic(message, 't', &value);
}

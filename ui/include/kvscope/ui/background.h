#pragma once
// One piece of work off the window's thread at a time, whose answer is applied back on it: the Deployment tab's
// reading of this computer's memory and the probe's device listing. The object the answer is for (the receiver)
// holds its Background as a member: the destructor waits for the work, and Qt drops an answer queued to a receiver
// that is gone.

#include <functional>

class QObject;
class QThread;

namespace kvscope::ui {

class Background {
public:
    Background() = default;
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    Background(Background&&) = delete;
    Background& operator=(Background&&) = delete;
    ~Background();  // waits for the work running

    [[nodiscard]] bool running() const { return thread_ != nullptr; }
    // Runs `work` on a thread of its own, then, on `receiver`'s thread once that thread has ended, the function `work`
    // returned. False, and nothing runs, while earlier work runs.
    bool run(QObject* receiver, std::function<std::function<void()>()> work);
    // Waits for the work running, if any; its answer still comes.
    void wait() const;

private:
    QThread* thread_ = nullptr;
};

}  // namespace kvscope::ui

#include "kvscope/ui/background.h"

#include <QThread>
#include <memory>

namespace kvscope::ui {

Background::~Background() {
    if (!thread_) return;
    thread_->wait();
    delete thread_;
}

void Background::wait() const {
    if (thread_) thread_->wait();
}

bool Background::run(QObject* receiver, std::function<std::function<void()>()> work) {
    if (thread_) return false;
    thread_ = QThread::create([this, receiver, work = std::move(work)] {
        auto answer = std::make_shared<std::function<void()>>(work());
        QMetaObject::invokeMethod(
            receiver,
            [this, answer] {
                // The thread has handed over its answer: it ends, and the next work may start from the answer.
                thread_->wait();
                delete thread_;
                thread_ = nullptr;
                (*answer)();
            },
            Qt::QueuedConnection);
    });
    thread_->start();
    return true;
}

}  // namespace kvscope::ui
